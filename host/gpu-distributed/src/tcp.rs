//! The hub over TCP, for ranks in other processes (std sockets only; no MPI).
//!
//! Rank 0 listens on `MASTER_PORT`; every other rank connects to `MASTER_ADDR:MASTER_PORT`,
//! says which rank it is, and keeps the connection for the life of its communicator. Each frame
//! is `[u32 length][u8 tag][payload]`, little-endian. A connection that closes without a
//! goodbye frame is a failed rank; rank 0's hub tells every other rank.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::element::{DataType, ReduceOp};
use crate::hub::{Failure, Hub, Link, OpDesc, OpKind, P2pDesc, Push, WaitError, wait_on};

const HELLO: u8 = 1;
const CHECK: u8 = 2;
const P2P: u8 = 3;
const CONTRIBUTE: u8 = 4;
const POST: u8 = 5;
const FAIL: u8 = 6;
const GOODBYE: u8 = 7;
const ID: u8 = 10;
const FAILURE: u8 = 11;
const RESULT: u8 = 12;
const MAIL: u8 = 13;
const SHUTDOWN: u8 = 14;

/// A frame being written.
struct Frame(Vec<u8>);

impl Frame {
    fn new(tag: u8) -> Frame {
        Frame(vec![0, 0, 0, 0, tag])
    }
    fn u64(mut self, v: u64) -> Frame {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(self, b: &[u8]) -> Frame {
        let mut f = self.u64(b.len() as u64);
        f.0.extend_from_slice(b);
        f
    }
    fn desc(self, d: &OpDesc) -> Frame {
        self.u64(d.kind as u64)
            .u64(d.dtype as u64)
            .u64(d.count)
            .u64(d.op.map_or(u64::MAX, |o| o as u64))
            .u64(d.root.map_or(u64::MAX, u64::from))
    }
    fn finish(mut self) -> Vec<u8> {
        let len = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

/// A frame being read.
struct Reader<'a> {
    tag: u8,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.rest.split_at_checked(8)?;
        self.rest = rest;
        Some(u64::from_le_bytes(head.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.u64()?).ok()?;
        let (head, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(head.to_vec())
    }
    fn string(&mut self) -> Option<String> {
        Some(String::from_utf8_lossy(&self.bytes()?).into_owned())
    }
    fn desc(&mut self) -> Option<OpDesc> {
        let kind = OpKind::from_code(u8::try_from(self.u64()?).ok()?)?;
        let dtype = DataType::from_code(i32::try_from(self.u64()?).ok()?)?;
        let count = self.u64()?;
        let op = match self.u64()? {
            u64::MAX => None,
            v => Some(ReduceOp::from_code(i32::try_from(v).ok()?)?),
        };
        let root = match self.u64()? {
            u64::MAX => None,
            v => Some(u32::try_from(v).ok()?),
        };
        Some(OpDesc {
            kind,
            dtype,
            count,
            op,
            root,
        })
    }
}

/// Reads one frame: `Ok(None)` at a clean end of stream.
fn read_frame(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut buf = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

fn parse(buf: &[u8]) -> Option<Reader<'_>> {
    let (&tag, rest) = buf.split_first()?;
    Some(Reader { tag, rest })
}

// ---------------------------------------------------------------- the hub's side (rank 0)

/// Accepts the other ranks' connections and serves them, on background threads, until the
/// hub closes. Returns at once.
pub(crate) fn serve(hub: Arc<Hub>, listener: TcpListener) {
    std::thread::Builder::new()
        .name("gpu-dist-hub".into())
        .spawn(move || {
            let mut joined = 0;
            let need = hub.size() - 1;
            while joined < need {
                let Ok((stream, _)) = listener.accept() else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let hub = hub.clone();
                joined += 1;
                let _ = std::thread::Builder::new()
                    .name("gpu-dist-hub-rank".into())
                    .spawn(move || serve_rank(hub, stream));
            }
        })
        .expect("spawning the hub's accept thread");
}

fn serve_rank(hub: Arc<Hub>, stream: TcpStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    // The first frame says which rank this is.
    let rank = match read_frame(&mut reader)
        .ok()
        .flatten()
        .as_deref()
        .and_then(parse)
    {
        Some(mut r) if r.tag == HELLO => {
            let (rank, size) = (r.u64(), r.u64());
            match (rank, size) {
                (Some(rank), Some(size)) if size as usize == hub.size() && rank > 0 => {
                    rank as usize
                }
                (rank, size) => {
                    hub.fail(
                        rank.unwrap_or(0) as usize,
                        format!(
                            "a process joined as rank {rank:?} of a world of {size:?} ranks, \
                             but rank 0's world has {} ranks (check WORLD_SIZE and RANK)",
                            hub.size()
                        ),
                    );
                    return;
                }
            }
        }
        _ => return,
    };
    let (tx, rx) = channel::<Push>();
    let write_half = Arc::new(Mutex::new(write_half));
    let direct = write_half.clone();
    std::thread::spawn(move || push_loop(write_half, rx));
    hub.attach_remote(
        rank,
        tx,
        Box::new(move |f: &Failure| {
            let frame = Frame::new(FAILURE)
                .u64(f.rank as u64)
                .bytes(f.reason.as_bytes())
                .finish();
            let mut s = direct.lock().unwrap_or_else(|p| p.into_inner());
            let _ = s.write_all(&frame);
        }),
    );
    while let Ok(Some(frame)) = read_frame(&mut reader) {
        let Some(mut r) = parse(&frame) else { break };
        match r.tag {
            CHECK => {
                if let (Some(seq), Some(desc)) = (r.u64(), r.desc()) {
                    hub.check(rank, seq, desc);
                }
            }
            P2P => {
                let desc = (|| {
                    Some(P2pDesc {
                        src: u32::try_from(r.u64()?).ok()?,
                        dst: u32::try_from(r.u64()?).ok()?,
                        nth: r.u64()?,
                        dtype: DataType::from_code(i32::try_from(r.u64()?).ok()?)?,
                        count: r.u64()?,
                        is_send: r.u64()? != 0,
                    })
                })();
                if let Some(d) = desc {
                    hub.check_p2p(d);
                }
            }
            CONTRIBUTE => {
                if let (Some(seq), Some(desc), Some(data)) = (r.u64(), r.desc(), r.bytes()) {
                    hub.contribute(rank, seq, desc, data);
                }
            }
            POST => {
                if let (Some(dst), Some(nth), Some(data)) = (r.u64(), r.u64(), r.bytes()) {
                    hub.post(rank, dst as usize, nth, data);
                }
            }
            FAIL => {
                let reason = r.string().unwrap_or_default();
                hub.fail(rank, reason);
            }
            GOODBYE => {
                hub.goodbye(rank);
                return;
            }
            _ => break,
        }
    }
    if !hub.is_gone(rank) {
        hub.fail(
            rank,
            format!(
                "rank {rank}'s process exited or lost its connection before finishing (it \
                 returned, crashed or was killed without closing its communicator)"
            ),
        );
    }
}

fn push_loop(stream: Arc<Mutex<TcpStream>>, rx: Receiver<Push>) {
    for push in rx {
        let (frame, last) = match push {
            Push::Id(id) => (Frame::new(ID).bytes(&id), false),
            Push::Result { seq, data } => (Frame::new(RESULT).u64(seq).bytes(&data), false),
            Push::Mail { src, nth, data } => (
                Frame::new(MAIL).u64(src as u64).u64(nth).bytes(&data),
                false,
            ),
            Push::Shutdown => (Frame::new(SHUTDOWN), true),
        };
        let mut s = stream.lock().unwrap_or_else(|p| p.into_inner());
        if s.write_all(&frame.finish()).is_err() || last {
            return;
        }
    }
}

// ---------------------------------------------------------------- a rank's side

#[derive(Default)]
struct ClientState {
    id: Option<Vec<u8>>,
    failure: Option<Failure>,
    results: HashMap<u64, Vec<u8>>,
    mail: HashMap<(usize, u64), Vec<u8>>,
    shutdown: bool,
}

/// A rank in another process than the hub's.
pub(crate) struct TcpLink {
    rank: usize,
    /// Frames to send, in order (a writer thread sends them, so callers never block on the
    /// socket); `None` once the rank said goodbye.
    out: Mutex<Option<Sender<Vec<u8>>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// The socket itself, for the last words of a panicking process (written directly).
    socket: Arc<Mutex<TcpStream>>,
    state: Arc<(Mutex<ClientState>, Condvar)>,
}

impl TcpLink {
    /// Connects to the hub at `addr`, retrying until `deadline` (rank 0 may start later).
    pub(crate) fn connect(
        addr: &str,
        rank: usize,
        size: usize,
        deadline: Instant,
    ) -> std::io::Result<TcpLink> {
        let stream = loop {
            match TcpStream::connect(addr) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream.set_nodelay(true)?;
        let read_half = stream.try_clone()?;
        let socket = Arc::new(Mutex::new(stream));
        let (tx, rx) = channel::<Vec<u8>>();
        let writer = {
            let socket = socket.clone();
            std::thread::Builder::new()
                .name("gpu-dist-send".into())
                .spawn(move || {
                    for frame in rx {
                        let mut s = socket.lock().unwrap_or_else(|p| p.into_inner());
                        if s.write_all(&frame).is_err() {
                            return;
                        }
                    }
                })?
        };
        let state: Arc<(Mutex<ClientState>, Condvar)> = Arc::default();
        {
            let state = state.clone();
            std::thread::Builder::new()
                .name("gpu-dist-recv".into())
                .spawn(move || receive_loop(read_half, state))?;
        }
        let link = TcpLink {
            rank,
            out: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            socket,
            state,
        };
        link.send(Frame::new(HELLO).u64(rank as u64).u64(size as u64));
        Ok(link)
    }

    fn send(&self, frame: Frame) {
        if let Some(tx) = &*self.out.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(frame.finish());
        }
    }

    fn wait<T>(
        &self,
        deadline: Instant,
        ready: impl FnMut(&mut ClientState) -> Option<T>,
    ) -> Result<T, WaitError> {
        let (lock, cvar) = &*self.state;
        wait_on(lock, cvar, deadline, |st| st.failure.as_ref(), ready)
    }
}

fn receive_loop(stream: TcpStream, state: Arc<(Mutex<ClientState>, Condvar)>) {
    let mut reader = BufReader::new(stream);
    let (lock, cvar) = &*state;
    loop {
        let frame = read_frame(&mut reader).ok().flatten();
        let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(frame) = frame else {
            if !st.shutdown && st.failure.is_none() {
                st.failure = Some(Failure {
                    rank: 0,
                    reason: "rank 0 (which holds the rendezvous) exited or lost its connection \
                             before the other ranks finished"
                        .into(),
                });
            }
            cvar.notify_all();
            return;
        };
        let Some(mut r) = parse(&frame) else { continue };
        match r.tag {
            ID => st.id = r.bytes(),
            FAILURE => {
                if let (Some(rank), Some(reason)) = (r.u64(), r.string())
                    && st.failure.is_none()
                {
                    st.failure = Some(Failure {
                        rank: rank as usize,
                        reason,
                    });
                }
            }
            RESULT => {
                if let (Some(seq), Some(data)) = (r.u64(), r.bytes()) {
                    st.results.insert(seq, data);
                }
            }
            MAIL => {
                if let (Some(src), Some(nth), Some(data)) = (r.u64(), r.u64(), r.bytes()) {
                    st.mail.insert((src as usize, nth), data);
                }
            }
            SHUTDOWN => st.shutdown = true,
            _ => {}
        }
        cvar.notify_all();
    }
}

impl Link for TcpLink {
    fn publish_id(&self, _id: Vec<u8>) {
        unreachable!("only rank 0, which holds the hub, publishes the id")
    }
    fn wait_id(&self, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.id.clone())
    }
    fn check(&self, seq: u64, desc: OpDesc) {
        self.send(Frame::new(CHECK).u64(seq).desc(&desc));
    }
    fn check_p2p(&self, d: P2pDesc) {
        self.send(
            Frame::new(P2P)
                .u64(d.src.into())
                .u64(d.dst.into())
                .u64(d.nth)
                .u64(d.dtype as u64)
                .u64(d.count)
                .u64(d.is_send.into()),
        );
    }
    fn contribute(&self, seq: u64, desc: OpDesc, data: Vec<u8>) {
        self.send(Frame::new(CONTRIBUTE).u64(seq).desc(&desc).bytes(&data));
    }
    fn collect(&self, seq: u64, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.results.remove(&seq))
    }
    fn post(&self, dst: usize, nth: u64, data: Vec<u8>) {
        self.send(Frame::new(POST).u64(dst as u64).u64(nth).bytes(&data));
    }
    fn take(&self, src: usize, nth: u64, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.mail.remove(&(src, nth)))
    }
    fn fail(&self, reason: String) {
        {
            let (lock, cvar) = &*self.state;
            let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
            if st.failure.is_none() {
                st.failure = Some(Failure {
                    rank: self.rank,
                    reason: reason.clone(),
                });
            }
            cvar.notify_all();
        }
        // Written directly, not queued: this may be a panicking process's last act.
        let frame = Frame::new(FAIL).bytes(reason.as_bytes()).finish();
        let mut s = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        let _ = s.write_all(&frame);
    }
    fn failure(&self) -> Option<Failure> {
        let (lock, _) = &*self.state;
        lock.lock()
            .unwrap_or_else(|p| p.into_inner())
            .failure
            .clone()
    }
    fn goodbye(&self) {
        self.send(Frame::new(GOODBYE));
        // Closing the queue ends the writer once it has sent everything, goodbye last.
        drop(self.out.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(w) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = w.join();
        }
    }
}

/// Binds rank 0's listening socket on every interface at `port` (so ranks on other machines
/// can reach it through `MASTER_ADDR`).
pub(crate) fn listen(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("0.0.0.0", port))
}
