//! The control plane beside every communicator's data path.
//!
//! One hub per world holds what the ranks must agree on: NCCL's unique id (the bootstrap), the
//! description of every collective each rank calls (so a rank that calls a different collective
//! or a different length is an error on every rank, not a hang), which ranks have failed, and —
//! for the simulated communicator only — the data of the collectives themselves.
//!
//! The hub lives in rank 0's process. Ranks in that process (threads, or several GPUs driven by
//! one process) reach it directly ([`LocalLink`]); ranks in other processes over one TCP
//! connection each ([`crate::tcp`]). A rank whose connection closes without saying goodbye has
//! failed (its process exited or died), and every other rank is told at once.
//!
//! Nothing here blocks without a deadline: every wait returns when the data arrives, when a
//! rank fails, or when the deadline passes.

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crate::element::{DataType, ReduceOp, combine_bytes, divide_bytes};

/// A rank's failure, as every rank learns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub rank: usize,
    pub reason: String,
}

/// What a collective is, as each rank called it: compared across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpDesc {
    pub(crate) kind: OpKind,
    pub(crate) dtype: DataType,
    /// Elements each rank sends (all_gather, reduce_scatter: the per-rank part).
    pub(crate) count: u64,
    pub(crate) op: Option<ReduceOp>,
    pub(crate) root: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpKind {
    AllReduce = 0,
    Reduce = 1,
    Broadcast = 2,
    AllGather = 3,
    ReduceScatter = 4,
    Barrier = 5,
}

impl OpKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::AllReduce => "all_reduce",
            OpKind::Reduce => "reduce",
            OpKind::Broadcast => "broadcast",
            OpKind::AllGather => "all_gather",
            OpKind::ReduceScatter => "reduce_scatter",
            OpKind::Barrier => "barrier",
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<OpKind> {
        Some(match c {
            0 => OpKind::AllReduce,
            1 => OpKind::Reduce,
            2 => OpKind::Broadcast,
            3 => OpKind::AllGather,
            4 => OpKind::ReduceScatter,
            5 => OpKind::Barrier,
            _ => return None,
        })
    }
}

impl std::fmt::Display for OpDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} x {}",
            self.kind.name(),
            self.count,
            self.dtype.name()
        )?;
        if let Some(op) = self.op {
            write!(f, " ({op:?})")?;
        }
        if let Some(root) = self.root {
            write!(f, " with root {root}")?;
        }
        Ok(())
    }
}

/// A point-to-point transfer as one side described it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct P2pDesc {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    /// The how-many-th transfer from `src` to `dst` (0-based).
    pub(crate) nth: u64,
    pub(crate) dtype: DataType,
    pub(crate) count: u64,
    /// Whether the sender (else the receiver) described it.
    pub(crate) is_send: bool,
}

/// Why a wait ended without its data.
#[derive(Debug)]
pub(crate) enum WaitError {
    Failed(Failure),
    TimedOut,
}

/// A rank's handle on the hub: every operation a communicator needs of the control plane.
pub(crate) trait Link: Send + Sync {
    /// Rank 0 publishes the bootstrap bytes; every rank (rank 0 too) gets them.
    fn publish_id(&self, id: Vec<u8>);
    fn wait_id(&self, deadline: Instant) -> Result<Vec<u8>, WaitError>;
    /// Records this rank's `seq`-th collective for comparison (does not wait).
    fn check(&self, seq: u64, desc: OpDesc);
    /// Records one side of a point-to-point transfer for comparison (does not wait).
    fn check_p2p(&self, desc: P2pDesc);
    /// Simulated collectives: hands in this rank's data (does not wait)...
    fn contribute(&self, seq: u64, desc: OpDesc, data: Vec<u8>);
    /// ...and waits for this rank's result.
    fn collect(&self, seq: u64, deadline: Instant) -> Result<Vec<u8>, WaitError>;
    /// Simulated point-to-point: posts the `nth` message to `dst` (does not wait)...
    fn post(&self, dst: usize, nth: u64, data: Vec<u8>);
    /// ...and waits for the `nth` message from `src`.
    fn take(&self, src: usize, nth: u64, deadline: Instant) -> Result<Vec<u8>, WaitError>;
    /// Declares this rank failed; every rank learns it.
    fn fail(&self, reason: String);
    /// The first failure of any rank, if one happened.
    fn failure(&self) -> Option<Failure>;
    /// This rank is done (its communicator was dropped normally).
    fn goodbye(&self);
}

/// Messages the hub pushes to a rank in another process.
pub(crate) enum Push {
    Id(Vec<u8>),
    Result {
        seq: u64,
        data: Vec<u8>,
    },
    Mail {
        src: usize,
        nth: u64,
        data: Vec<u8>,
    },
    /// Every rank said goodbye: the hub closes.
    Shutdown,
}

/// Writes a failure to a rank in another process directly.
pub(crate) type Urgent = Box<dyn Fn(&Failure) + Send>;

/// A collective whose contributions are arriving.
struct Pending {
    descs: Vec<Option<OpDesc>>,
    data: Vec<Option<Vec<u8>>>,
    arrived: usize,
}

#[derive(Default)]
struct State {
    id: Option<Vec<u8>>,
    failure: Option<Failure>,
    gone: Vec<bool>,
    /// Collectives each rank has called so far.
    calls: Vec<u64>,
    /// Collective checks: seq -> (first reporter, its description, how many reported).
    checks: HashMap<u64, (usize, OpDesc, usize)>,
    /// Point-to-point checks: (src, dst, nth) -> the side that reported first.
    p2p: HashMap<(u32, u32, u64), P2pDesc>,
    pending: HashMap<u64, Pending>,
    /// Results of simulated collectives for ranks in this process: (seq, rank) -> data.
    results: HashMap<(u64, usize), Vec<u8>>,
    /// Simulated messages for ranks in this process: (src, dst, nth) -> data.
    mail: HashMap<(usize, usize, u64), Vec<u8>>,
    /// Ranks in other processes: where their pushes go.
    remote: HashMap<usize, Sender<Push>>,
    /// Ranks in other processes: how to tell them of a failure at once (written before the
    /// call returns, so it is out even if this process exits right after).
    urgent: HashMap<usize, Urgent>,
}

/// The hub itself: shared state, and a condition variable that wakes every waiter on change.
pub(crate) struct Hub {
    size: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Hub {
    pub(crate) fn new(size: usize) -> Arc<Hub> {
        Arc::new(Hub {
            size,
            state: Mutex::new(State {
                gone: vec![false; size],
                calls: vec![0; size],
                ..State::default()
            }),
            changed: Condvar::new(),
        })
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data; keep going with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `ready` yields a value, a rank fails, or `deadline` passes.
    fn wait<T>(
        &self,
        deadline: Instant,
        ready: impl FnMut(&mut State) -> Option<T>,
    ) -> Result<T, WaitError> {
        wait_on(
            &self.state,
            &self.changed,
            deadline,
            |st| st.failure.as_ref(),
            ready,
        )
    }

    /// Registers a rank of another process; pushes what it missed (the id, a failure).
    pub(crate) fn attach_remote(&self, rank: usize, to: Sender<Push>, urgent: Urgent) {
        let mut st = self.lock();
        if let Some(id) = &st.id {
            let _ = to.send(Push::Id(id.clone()));
        }
        if let Some(f) = &st.failure {
            urgent(f);
        }
        st.remote.insert(rank, to);
        st.urgent.insert(rank, urgent);
    }

    pub(crate) fn publish_id(&self, id: Vec<u8>) {
        let mut st = self.lock();
        for to in st.remote.values() {
            let _ = to.send(Push::Id(id.clone()));
        }
        st.id = Some(id);
        self.changed.notify_all();
    }

    pub(crate) fn wait_id(&self, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.id.clone())
    }

    /// Records a failure of `rank` (the first one wins) and tells every rank.
    pub(crate) fn fail(&self, rank: usize, reason: String) {
        let mut st = self.lock();
        Hub::fail_locked(&mut st, rank, reason);
        self.changed.notify_all();
    }

    fn fail_locked(st: &mut State, rank: usize, reason: String) {
        if st.failure.is_some() {
            return;
        }
        let f = Failure { rank, reason };
        for tell in st.urgent.values() {
            tell(&f);
        }
        st.failure = Some(f);
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        self.lock().failure.clone()
    }

    /// `rank` is done. When every rank is, ranks in other processes are told to close.
    pub(crate) fn goodbye(&self, rank: usize) {
        let mut st = self.lock();
        if let Some(g) = st.gone.get_mut(rank) {
            *g = true;
        }
        let mine = st.calls.get(rank).copied().unwrap_or(0);
        if let Some(other) = (0..self.size).find(|&r| st.calls[r] > mine) {
            let reason = format!(
                "rank {rank} finished (closed its communicator) after {mine} collective(s), \
                 but rank {other} called more ({}): rank {other} would wait for it forever",
                st.calls[other]
            );
            Hub::fail_locked(&mut st, rank, reason);
        }
        if st.gone.iter().all(|&g| g) {
            for to in st.remote.values() {
                let _ = to.send(Push::Shutdown);
            }
        }
        self.changed.notify_all();
    }

    /// Whether `rank` said goodbye.
    pub(crate) fn is_gone(&self, rank: usize) -> bool {
        self.lock().gone.get(rank).copied().unwrap_or(true)
    }

    /// Waits (until `deadline`) for every rank to say goodbye or for a failure; rank 0 calls
    /// this before closing the hub, so that slower ranks can still finish.
    pub(crate) fn wait_all_gone(&self, deadline: Instant) -> bool {
        self.wait(deadline, |st| st.gone.iter().all(|&g| g).then_some(()))
            .is_ok()
    }

    /// Counts `rank`'s collective `seq`; a rank that already finished without it has failed.
    fn record_call(&self, st: &mut State, rank: usize, seq: u64) {
        if let Some(c) = st.calls.get_mut(rank) {
            *c = (*c).max(seq + 1);
        }
        if let Some(gone) = (0..self.size).find(|&r| st.gone[r] && st.calls[r] <= seq) {
            let reason = format!(
                "rank {gone} finished (closed its communicator) after {} collective(s), but \
                 rank {rank} called collective #{seq}, which needs every rank",
                st.calls[gone]
            );
            Hub::fail_locked(st, gone, reason);
            self.changed.notify_all();
        }
    }

    pub(crate) fn check(&self, rank: usize, seq: u64, desc: OpDesc) {
        let mut st = self.lock();
        self.record_call(&mut st, rank, seq);
        let size = self.size;
        let entry = st.checks.entry(seq).or_insert((rank, desc, 0));
        entry.2 += 1;
        let (first, expected, seen) = *entry;
        if seen == size {
            st.checks.remove(&seq);
        }
        if expected != desc {
            let reason = format!(
                "collective #{seq} does not match across ranks: rank {first} called {expected}, \
                 rank {rank} called {desc}"
            );
            Hub::fail_locked(&mut st, rank, reason);
            self.changed.notify_all();
        }
    }

    pub(crate) fn check_p2p(&self, desc: P2pDesc) {
        let mut st = self.lock();
        let key = (desc.src, desc.dst, desc.nth);
        match st.p2p.remove(&key) {
            None => {
                st.p2p.insert(key, desc);
            }
            Some(other) if other.is_send == desc.is_send => {
                // The same side twice cannot happen (each side numbers its own transfers).
                st.p2p.insert(key, desc);
            }
            Some(other) => {
                let (send, recv) = if desc.is_send {
                    (desc, other)
                } else {
                    (other, desc)
                };
                if (send.dtype, send.count) != (recv.dtype, recv.count) {
                    let reason = format!(
                        "transfer #{} from rank {} to rank {} does not match: rank {} sends {} \
                         x {}, rank {} receives {} x {}",
                        send.nth,
                        send.src,
                        send.dst,
                        send.src,
                        send.count,
                        send.dtype.name(),
                        recv.dst,
                        recv.count,
                        recv.dtype.name()
                    );
                    Hub::fail_locked(&mut st, desc.src.max(desc.dst) as usize, reason);
                    self.changed.notify_all();
                }
            }
        }
    }

    pub(crate) fn contribute(&self, rank: usize, seq: u64, desc: OpDesc, data: Vec<u8>) {
        let mut st = self.lock();
        self.record_call(&mut st, rank, seq);
        let size = self.size;
        let p = st.pending.entry(seq).or_insert_with(|| Pending {
            descs: vec![None; size],
            data: vec![None; size],
            arrived: 0,
        });
        if p.descs[rank].is_none() {
            p.arrived += 1;
        }
        p.descs[rank] = Some(desc);
        p.data[rank] = Some(data);
        if p.arrived < size {
            return;
        }
        let p = st.pending.remove(&seq).expect("present");
        match finish(seq, p) {
            Ok(results) => {
                for (r, data) in results.into_iter().enumerate() {
                    match st.remote.get(&r) {
                        Some(to) => {
                            let _ = to.send(Push::Result { seq, data });
                        }
                        None => {
                            st.results.insert((seq, r), data);
                        }
                    }
                }
            }
            Err((rank, reason)) => Hub::fail_locked(&mut st, rank, reason),
        }
        self.changed.notify_all();
    }

    pub(crate) fn collect(
        &self,
        rank: usize,
        seq: u64,
        deadline: Instant,
    ) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.results.remove(&(seq, rank)))
    }

    pub(crate) fn post(&self, src: usize, dst: usize, nth: u64, data: Vec<u8>) {
        let mut st = self.lock();
        match st.remote.get(&dst) {
            Some(to) => {
                let _ = to.send(Push::Mail { src, nth, data });
            }
            None => {
                st.mail.insert((src, dst, nth), data);
            }
        }
        self.changed.notify_all();
    }

    pub(crate) fn take(
        &self,
        src: usize,
        dst: usize,
        nth: u64,
        deadline: Instant,
    ) -> Result<Vec<u8>, WaitError> {
        self.wait(deadline, |st| st.mail.remove(&(src, dst, nth)))
    }
}

/// Waits on `lock`'s state until `ready` yields a value, `failure` reports one, or `deadline`
/// passes; `changed` is notified on every change of the state.
pub(crate) fn wait_on<S, T>(
    lock: &Mutex<S>,
    changed: &Condvar,
    deadline: Instant,
    failure: impl Fn(&S) -> Option<&Failure>,
    mut ready: impl FnMut(&mut S) -> Option<T>,
) -> Result<T, WaitError> {
    // A panic while holding the lock leaves plain data; keep going with it.
    let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(v) = ready(&mut st) {
            return Ok(v);
        }
        if let Some(f) = failure(&st) {
            return Err(WaitError::Failed(f.clone()));
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(WaitError::TimedOut);
        }
        st = changed
            .wait_timeout(st, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Computes every rank's result of a simulated collective, or says which rank disagrees.
fn finish(seq: u64, p: Pending) -> Result<Vec<Vec<u8>>, (usize, String)> {
    let descs: Vec<OpDesc> = p
        .descs
        .into_iter()
        .map(|d| d.expect("all arrived"))
        .collect();
    let data: Vec<Vec<u8>> = p
        .data
        .into_iter()
        .map(|d| d.expect("all arrived"))
        .collect();
    let d = descs[0];
    if let Some(r) = descs.iter().position(|x| *x != d) {
        return Err((
            r,
            format!(
                "collective #{seq} does not match across ranks: rank 0 called {d}, rank {r} \
                 called {}",
                descs[r]
            ),
        ));
    }
    let size = data.len();
    let reduce_all = || {
        let mut acc = data[0].clone();
        let op = d.op.unwrap_or(ReduceOp::Sum);
        for other in &data[1..] {
            combine_bytes(d.dtype, op, &mut acc, other);
        }
        if op == ReduceOp::Avg {
            divide_bytes(d.dtype, &mut acc, size);
        }
        acc
    };
    let root = d.root.unwrap_or(0) as usize;
    Ok(match d.kind {
        OpKind::AllReduce => vec![reduce_all(); size],
        OpKind::Reduce => {
            let mut out = vec![Vec::new(); size];
            out[root] = reduce_all();
            out
        }
        OpKind::Broadcast => vec![data[root].clone(); size],
        OpKind::AllGather => vec![data.concat(); size],
        OpKind::ReduceScatter => {
            let all = reduce_all();
            let part = all.len() / size;
            all.chunks(part.max(1))
                .map(<[u8]>::to_vec)
                .chain(std::iter::repeat(Vec::new()))
                .take(size)
                .collect()
        }
        OpKind::Barrier => vec![Vec::new(); size],
    })
}

/// A rank in the hub's own process.
pub(crate) struct LocalLink {
    pub(crate) hub: Arc<Hub>,
    pub(crate) rank: usize,
}

impl Link for LocalLink {
    fn publish_id(&self, id: Vec<u8>) {
        self.hub.publish_id(id)
    }
    fn wait_id(&self, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.hub.wait_id(deadline)
    }
    fn check(&self, seq: u64, desc: OpDesc) {
        self.hub.check(self.rank, seq, desc)
    }
    fn check_p2p(&self, desc: P2pDesc) {
        self.hub.check_p2p(desc)
    }
    fn contribute(&self, seq: u64, desc: OpDesc, data: Vec<u8>) {
        self.hub.contribute(self.rank, seq, desc, data)
    }
    fn collect(&self, seq: u64, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.hub.collect(self.rank, seq, deadline)
    }
    fn post(&self, dst: usize, nth: u64, data: Vec<u8>) {
        self.hub.post(self.rank, dst, nth, data)
    }
    fn take(&self, src: usize, nth: u64, deadline: Instant) -> Result<Vec<u8>, WaitError> {
        self.hub.take(src, self.rank, nth, deadline)
    }
    fn fail(&self, reason: String) {
        self.hub.fail(self.rank, reason)
    }
    fn failure(&self) -> Option<Failure> {
        self.hub.failure()
    }
    fn goodbye(&self) {
        self.hub.goodbye(self.rank)
    }
}
