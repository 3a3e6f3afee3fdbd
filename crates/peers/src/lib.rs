//! Connections counted per client address, for the daemon's listeners:
//! `grpc.max_connections_per_ip` and `jsonrpc.max_connections_per_ip`.
//!
//! A listener's `max_connections` bounds what all its connections hold
//! together; one client that opens every place keeps everyone else out.
//! This bounds the places one address may hold, so that a lockout needs
//! `max_connections` / `max_connections_per_ip` addresses.
//!
//! IPv4 addresses count one by one, and so do IPv4 clients seen through
//! IPv6: an IPv4-mapped address (a dual-stack socket) and one in NAT64's
//! well-known prefix `64:ff9b::/96` (RFC 6052) count as their IPv4
//! address. Other IPv6 addresses count by their /64, the block one host
//! or network usually gets, so that a client does not step around the
//! limit with the next address of its own block; but loopback (`::1`) and
//! link-local (`fe80::/10`) addresses, whose /64 unrelated hosts share,
//! count one by one (without their interface: the same link-local
//! address on two links counts once).
//!
//! Behind a proxy every connection comes from the proxy's address: set 0
//! (off) there, or at least the connections the proxy opens, and limit
//! clients in the proxy (docs/operations.md).
//!
//! [`Places`] takes a new connection's two places, its peer's and one of
//! the listener's `max_connections`, or says which limit it is past (a map
//! under a mutex and a semaphore, taken once per accepted connection);
//! [`Refusals`] tells a refused connection why and closes it;
//! [`Warning`] keeps a listener's warnings to one each 10 s.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Whose connections count together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// An IPv4 address (an IPv4-mapped or NAT64 IPv6 address too).
    V4(Ipv4Addr),
    /// An IPv6 loopback or link-local address, alone.
    V6(Ipv6Addr),
    /// The first 64 bits of any other IPv6 address.
    V6Net(u64),
}

/// NAT64's well-known prefix, `64:ff9b::/96` (RFC 6052): its top 96 bits.
const NAT64_PREFIX: u128 = 0x0064_ff9b_0000_0000_0000_0000;

impl Peer {
    /// Whose connections `addr`'s count with.
    pub fn of(addr: IpAddr) -> Self {
        match addr.to_canonical() {
            IpAddr::V4(a) => Self::V4(a),
            IpAddr::V6(a) => {
                let bits = u128::from(a);
                if bits >> 32 == NAT64_PREFIX {
                    Self::V4(Ipv4Addr::from(bits as u32))
                } else if a.is_loopback() || a.is_unspecified() || a.is_unicast_link_local() {
                    Self::V6(a)
                } else {
                    Self::V6Net((bits >> 64) as u64)
                }
            }
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(a) => write!(f, "{a}"),
            Self::V6(a) => write!(f, "{a}"),
            Self::V6Net(n) => write!(f, "{}/64", Ipv6Addr::from(u128::from(*n) << 64)),
        }
    }
}

/// The open connections of each peer, at most `max` each (0: not
/// counted). Holds an entry only for a peer with connections open, so at
/// most its listener's `max_connections` entries.
#[derive(Debug)]
pub struct PerPeer {
    max: u32,
    open: Mutex<HashMap<Peer, u32>>,
}

impl PerPeer {
    /// At most `max` connections a peer (0: not counted).
    pub fn new(max: u32) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more connection of `peer`, or `None` when `max` of
    /// its connections are open.
    pub fn take(self: &Arc<Self>, peer: Peer) -> Option<PeerPlace> {
        if self.max == 0 {
            return Some(PeerPlace { held: None });
        }
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(peer).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(PeerPlace {
            held: Some((self.clone(), peer)),
        })
    }

    /// Peers with a connection open (tests).
    #[cfg(test)]
    fn peers(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// One connection's place under its peer's limit, given back on drop.
#[derive(Debug)]
pub struct PeerPlace {
    held: Option<(Arc<PerPeer>, Peer)>,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let Some((per, peer)) = self.held.take() else {
            return;
        };
        let mut open = per.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                open.remove(&peer);
            }
        }
    }
}

/// Which limit a new connection is past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Past {
    /// `max_connections_per_ip` of its peer are open.
    PerIp,
    /// `max_connections` are open.
    Limit,
}

/// A listener's two limits: `max_connections` in all and
/// `max_connections_per_ip` of one peer.
#[derive(Debug)]
pub struct Places {
    all: Arc<Semaphore>,
    per_peer: Arc<PerPeer>,
}

/// A connection's places under both limits, given back on drop.
#[derive(Debug)]
pub struct Held {
    _all: OwnedSemaphorePermit,
    _peer: PeerPlace,
}

impl Places {
    /// `max` connections in all, `max_per_ip` of one peer (0: not
    /// counted).
    pub fn new(max: u32, max_per_ip: u32) -> Self {
        Self {
            all: Arc::new(Semaphore::new(max as usize)),
            per_peer: PerPeer::new(max_per_ip),
        }
    }

    /// Both places for a connection of `peer`, or the limit it is past.
    /// Its peer's place is taken first, so that a connection refused
    /// there takes none of the others'.
    pub fn take(&self, peer: Peer) -> Result<Held, Past> {
        let mine = self.per_peer.take(peer).ok_or(Past::PerIp)?;
        let all = self
            .all
            .clone()
            .try_acquire_owned()
            .map_err(|_| Past::Limit)?;
        Ok(Held {
            _all: all,
            _peer: mine,
        })
    }
}

/// Refused connections being told why and drained at once, for each limit
/// (so that one address past its own cannot take the turns of refusals
/// at `max_connections`).
const REFUSALS_AT_ONCE: usize = 64;

/// How long a refused connection is given to read its answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Connections being refused: each told why, then closed.
#[derive(Debug)]
pub struct Refusals {
    /// By [`Past`]: Limit, then PerIp.
    slots: [Arc<Semaphore>; 2],
}

impl Default for Refusals {
    fn default() -> Self {
        Self {
            slots: [(); 2].map(|()| Arc::new(Semaphore::new(REFUSALS_AT_ONCE))),
        }
    }
}

impl Refusals {
    /// Writes `answer` to `sock`, refused past `past`, then half-closes it
    /// and reads and drops what the client sends, for up to 1 s: closing a
    /// socket with unread bytes resets it, and the reset can reach the
    /// client before the answer does. With 64 such refusals of `past`
    /// already lingering, the answer is written only if the socket takes
    /// it at once, and the socket is closed at once (a reset can then
    /// overtake it). So refusals hold at most 128 descriptors, each for at
    /// most 1 s.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (it spawns the linger).
    pub fn refuse(&self, past: Past, mut sock: TcpStream, answer: Vec<u8>) {
        let i = match past {
            Past::Limit => 0,
            Past::PerIp => 1,
        };
        let Ok(slot) = self.slots[i].clone().try_acquire_owned() else {
            let _ = sock.try_write(&answer);
            return;
        };
        tokio::spawn(async move {
            let linger = async {
                sock.write_all(&answer).await?;
                sock.shutdown().await?;
                let mut buf = [0u8; 4096];
                while sock.read(&mut buf).await? > 0 {}
                std::io::Result::Ok(())
            };
            let _ = tokio::time::timeout(REFUSAL_LINGER, linger).await;
            drop(slot);
        });
    }
}

/// A warning logged at most once each 10 s.
#[derive(Debug, Default)]
pub struct Warning(Option<Instant>);

impl Warning {
    /// Whether to log now (and if so, not again for 10 s).
    pub fn due(&mut self) -> bool {
        if self
            .0
            .is_some_and(|t| t.elapsed() < Duration::from_secs(10))
        {
            return false;
        }
        self.0 = Some(Instant::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(s: &str) -> Peer {
        Peer::of(s.parse().expect("address"))
    }

    #[test]
    fn addresses_count_alone_and_ipv6_by_its_64() {
        assert_eq!(peer("192.0.2.7"), peer("::ffff:192.0.2.7"));
        assert_ne!(peer("192.0.2.7"), peer("192.0.2.8"));
        assert_eq!(peer("2001:db8:1:2::1"), peer("2001:db8:1:2:ffff::9"));
        assert_ne!(peer("2001:db8:1:2::1"), peer("2001:db8:1:3::1"));
        assert_eq!(peer("192.0.2.7").to_string(), "192.0.2.7");
        assert_eq!(peer("2001:db8:1:2:3::1").to_string(), "2001:db8:1:2::/64");
        // IPv4 clients through NAT64 count as themselves.
        assert_eq!(peer("64:ff9b::c000:207"), peer("192.0.2.7"));
        assert_ne!(peer("64:ff9b::c000:207"), peer("64:ff9b::c000:208"));
        // Loopback and link-local addresses share their /64 with others.
        assert_eq!(peer("::1").to_string(), "::1");
        assert_ne!(peer("::1"), peer("::2"));
        assert_ne!(peer("fe80::1"), peer("fe80::2"));
        assert_eq!(peer("fe80::1").to_string(), "fe80::1");
    }

    #[test]
    fn a_peer_holds_at_most_max_and_gets_places_back() {
        let per = PerPeer::new(2);
        let (a, b) = (peer("192.0.2.1"), peer("2001:db8::1"));
        let a1 = per.take(a).expect("first");
        let a2 = per.take(a).expect("second");
        assert!(per.take(a).is_none(), "a third of the same address");
        let b1 = per.take(b).expect("another peer");
        drop(a1);
        let a3 = per.take(a).expect("a place given back");
        assert!(per.take(a).is_none());
        drop((a2, a3, b1));
        assert_eq!(per.peers(), 0, "no entry outlives its connections");
    }

    #[test]
    fn places_take_the_peers_first_and_give_both_back() {
        let places = Places::new(2, 1);
        let (a, b, c) = (peer("192.0.2.1"), peer("192.0.2.2"), peer("192.0.2.3"));
        let a1 = places.take(a).expect("first");
        assert_eq!(places.take(a).err(), Some(Past::PerIp));
        let b1 = places.take(b).expect("another peer");
        assert_eq!(places.take(c).err(), Some(Past::Limit));
        // Refused at the limit, `c` holds no place of its own.
        assert_eq!(places.per_peer.peers(), 2);
        drop(a1);
        let c1 = places.take(c).expect("a place given back");
        drop((b1, c1));
        assert_eq!(places.per_peer.peers(), 0);
        assert_eq!(places.all.available_permits(), 2);
    }

    /// A refused client reads its whole answer and then the end of the
    /// stream, even with its own request unread by the server.
    #[tokio::test]
    async fn a_refusal_is_told_why_then_closed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.expect("connect");
            c.write_all(&[7u8; 10_000]).await.expect("request");
            let mut got = Vec::new();
            c.read_to_end(&mut got).await.expect("read");
            got
        });
        let (sock, _) = listener.accept().await.expect("accept");
        Refusals::default().refuse(Past::PerIp, sock, b"too many".to_vec());
        let got = tokio::time::timeout(Duration::from_secs(10), client)
            .await
            .expect("closed within the linger")
            .expect("client");
        assert_eq!(got, b"too many");
    }

    #[test]
    fn a_warning_waits_10_s() {
        let mut w = Warning::default();
        assert!(w.due());
        assert!(!w.due());
    }

    #[test]
    fn zero_counts_nothing() {
        let per = PerPeer::new(0);
        let held: Vec<_> = (0..1000)
            .map(|_| per.take(peer("192.0.2.1")).expect("unlimited"))
            .collect();
        assert_eq!((held.len(), per.peers()), (1000, 0));
    }
}
