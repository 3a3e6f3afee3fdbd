//! What the ingest engine takes: ledgers with their transactions, as they
//! arrive from a source (synthetic, Stellar files, or the gRPC stream).
//! Nothing here is validated yet; the store's validator does that.

/// One transaction of an incoming ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxInput {
    /// Transaction hash; must be 32 bytes.
    pub hash: Vec<u8>,
    /// Envelope bytes.
    pub envelope: Vec<u8>,
    /// Result bytes.
    pub result: Vec<u8>,
    /// Meta bytes.
    pub meta: Vec<u8>,
    /// A second hash the transaction is found by (Stellar: a fee bump's
    /// inner transaction hash); 32 bytes, distinct from every other hash.
    pub alias: Option<Vec<u8>>,
}

impl TxInput {
    /// Bytes of the three bodies.
    pub fn body_len(&self) -> usize {
        self.envelope.len() + self.result.len() + self.meta.len()
    }
}

/// One incoming ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerInput {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Raw ledger bytes.
    pub raw: Vec<u8>,
    /// Transactions in apply order.
    pub txs: Vec<TxInput>,
}

impl LedgerInput {
    /// Raw bytes of the ledger plus its transactions.
    pub fn total_len(&self) -> usize {
        self.raw.len() + self.txs.iter().map(TxInput::body_len).sum::<usize>()
    }
}
