//! A page of `getLedgers` or `getTransactions`, written as it is read:
//! `{"<items>":[item,item,…],<closing fields>}`. Items are added while
//! the byte budget (`jsonrpc.max_page_bytes`) and the soft deadline allow;
//! the item that would pass the budget is cut off and the page ends before
//! it, with a cursor that resumes there. The first item may take up to the
//! response limit (a page always moves forward); one larger than that is
//! refused with a message that says so.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::Ctx;
use crate::budget::{Call, Sink, Stop, TRAILER, write_failed};
use crate::error::{RpcError, RpcResult};
use crate::params::Format;

/// The fewest bytes `xdr` bytes of XDR take in a page: base64 is 4/3 of
/// them; XDR-JSON took 2.71 to 2.90 times them on the 20 pubnet ledgers of
/// the fixtures (protocol 26), so 2.5 here. Only used to stop a page
/// before reading an item that cannot fit; the budget itself counts the
/// bytes written.
pub(super) fn estimate(xdr: usize, format: Format) -> usize {
    match format {
        Format::Base64 => xdr / 3 * 4,
        Format::Json => xdr / 2 * 5,
    }
}

/// The serializer an item is written with.
pub(super) type Ser<'s> = serde_json::Serializer<&'s mut Sink>;

/// See the module docs.
pub(super) struct PageOut<'c> {
    sink: Sink,
    call: &'c Call,
    items: usize,
    /// The budget of a page with items in it.
    page_cap: usize,
    /// The first item's: the response limit.
    first_cap: usize,
}

impl<'c> PageOut<'c> {
    /// Opens the page's list of `key`.
    pub(super) fn new(key: &str, ctx: &Ctx, call: &'c Call) -> RpcResult<Self> {
        let first_cap = answer_cap(ctx, call);
        let page_cap = ctx.settings.page.max_bytes.min(first_cap);
        let mut sink = Sink::new(first_cap, page_cap + TRAILER, call.deadline);
        sink.raw(format!("{{\"{key}\":[").as_bytes())
            .map_err(|e| write_failed(&sink, call, e))?;
        Ok(Self {
            sink,
            call,
            items: 0,
            page_cap,
            first_cap,
        })
    }

    /// Items written so far.
    pub(super) fn len(&self) -> usize {
        self.items
    }

    /// Whether another item may start: one of at least `estimate` bytes
    /// still fits, and the soft deadline has not passed. The first item
    /// always may.
    pub(super) fn room_for(&self, estimate: usize) -> bool {
        self.items == 0 || (self.sink.len() + estimate <= self.page_cap && !self.call.soft_passed())
    }

    /// Writes one item with `write`: true if it fit, false if it did not
    /// (the page ends before it). Past the deadline, the timeout; a first
    /// item larger than the response limit, an error naming `what`.
    pub(super) fn item(
        &mut self,
        what: impl FnOnce() -> String,
        write: impl FnOnce(&mut Ser<'_>) -> Result<(), serde_json::Error>,
    ) -> RpcResult<bool> {
        let mark = self.sink.len();
        let first = self.items == 0;
        self.sink
            .set_cap(if first { self.first_cap } else { self.page_cap });
        let written = match first {
            true => Ok(()),
            false => self.sink.raw(b",").map_err(serde_json::Error::io),
        }
        .and_then(|()| write(&mut serde_json::Serializer::new(&mut self.sink)));
        match (written, self.sink.stopped()) {
            (Ok(()), _) => {
                self.items += 1;
                Ok(true)
            }
            (Err(_), Some(Stop::Deadline)) => Err(self.call.timed_out()),
            (Err(_), Some(Stop::Full)) if !first => {
                self.sink.truncate(mark);
                Ok(false)
            }
            (Err(_), Some(Stop::Full)) => Err(too_big(what(), self.call, self.first_cap)),
            (Err(e), None) => Err(RpcError::Internal(format!("writing {}: {e}", what()))),
        }
    }

    /// Closes the list, adds `fields` after it, and gives the page.
    pub(super) fn finish(mut self, fields: Map<String, Value>) -> RpcResult<Box<RawValue>> {
        let call = self.call;
        self.sink.set_cap(usize::MAX);
        let tail = Value::Object(fields).to_string();
        let members = tail.strip_prefix('{').unwrap_or(&tail);
        let comma = if members == "}" { "" } else { "," };
        self.sink
            .raw(format!("]{comma}{members}").as_bytes())
            .map_err(|e| write_failed(&self.sink, call, e))?;
        self.sink.finish()
    }
}

/// The most an answer may take: the response limit, or what is left of
/// its batch's budget, less the room for a page's closing fields.
fn answer_cap(ctx: &Ctx, call: &Call) -> usize {
    (ctx.settings.max_response_bytes as usize)
        .min(call.cap)
        .saturating_sub(TRAILER)
}

/// The refusal of an answer (`what`) larger than `cap`, the room
/// [`answer_cap`] gave it: what is left of its batch's budget, or the
/// response limit.
fn too_big(what: String, call: &Call, cap: usize) -> RpcError {
    let room = cap + TRAILER;
    if call.cap <= room {
        return RpcError::NoRoom(format!(
            "{what} takes more than the {room} bytes left of this batch's budget \
             (jsonrpc.max_batch_bytes): send this call in a request of its own"
        ));
    }
    RpcError::NoRoom(format!(
        "{what} takes more than the response limit of {room} bytes \
         (jsonrpc.max_response_bytes): XDR-JSON takes about twice base64's bytes, \
         or raise the limit"
    ))
}

/// One object (a method's whole result) written under the response limit
/// and the deadline.
pub(super) fn write_one(
    ctx: &Ctx,
    call: &Call,
    what: impl FnOnce() -> String,
    write: impl FnOnce(&mut Ser<'_>) -> Result<(), serde_json::Error>,
) -> RpcResult<Box<RawValue>> {
    let cap = answer_cap(ctx, call);
    let mut sink = Sink::new(cap, 0, call.deadline);
    let written = write(&mut serde_json::Serializer::new(&mut sink));
    match (written, sink.stopped()) {
        (Ok(()), _) => sink.finish(),
        (Err(_), Some(Stop::Deadline)) => Err(call.timed_out()),
        (Err(_), Some(Stop::Full)) => Err(too_big(what(), call, cap)),
        (Err(e), None) => Err(RpcError::Internal(format!("writing {}: {e}", what()))),
    }
}
