//! [`Group`]: several collectives and transfers issued together (NCCL's group calls).

use std::ops::Range;
use std::time::Instant;

use gpu_host::{BufferUse, DeviceBuffer};

use crate::comm::Communicator;
use crate::element::{CommElement, DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::hub::{OpDesc, OpKind, P2pDesc};
use crate::nccl::{IN_PROGRESS, SUCCESS};

/// Operations issued together: on NCCL one `ncclGroupStart`/`ncclGroupEnd` pair, so sends and
/// receives between the same ranks in both directions do not deadlock, and one thread can drive
/// the communicators of several devices (a collective must then be called on all of them in
/// one group).
///
/// Each method checks its arguments at once (before anything is called) and borrows its
/// buffers until [`Group::run`] queues everything; `run` returns once NCCL has accepted the
/// group (the work itself is asynchronous on each communicator's stream: see
/// [`Communicator::synchronize`]).
///
/// ```ignore
/// let mut g = Group::new();
/// g.send(&comm, &keys, 0..half, peer)?;
/// g.recv(&comm, &mut incoming, 0..n_in, peer)?;
/// g.run()?;
/// comm.synchronize()?;
/// ```
#[derive(Default)]
pub struct Group<'a> {
    ops: Vec<Op<'a>>,
}

struct Op<'a> {
    comm: &'a Communicator,
    what: What,
    dtype: DataType,
    /// Elements of the send side (per rank for all_gather; all of it for reduce_scatter).
    count: usize,
    /// (address, bytes) read by the operation.
    send: Option<(u64, usize)>,
    /// (address, bytes) written by the operation.
    recv: Option<(u64, usize)>,
    /// Keep the buffers borrowed and ordered until the work is queued.
    _uses: Vec<BufferUse<'a>>,
}

#[derive(Clone, Copy)]
enum What {
    Coll(OpDesc),
    Send { peer: usize },
    Recv { peer: usize },
}

fn argument(comm: &Communicator, operation: &str, message: String) -> Error {
    Error::Argument {
        rank: comm.rank(),
        operation: operation.to_string(),
        message,
    }
}

/// The buffer on the communicator's device, or an error naming the argument.
fn on_device<T: CommElement>(
    comm: &Communicator,
    operation: &str,
    name: &str,
    buf: &DeviceBuffer<T>,
) -> Result<()> {
    let (dev, stream) = (comm.gpu(), buf.stream());
    let mine = comm.stream();
    // Same device exactly when a stream of it is accepted: probe through the buffer's stream.
    if stream.is_simulator() != mine.is_simulator() {
        return Err(argument(
            comm,
            operation,
            format!(
                "`{name}` is on {} but rank {} runs on {}",
                if stream.is_simulator() {
                    "the CPU simulator"
                } else {
                    "a GPU"
                },
                comm.rank(),
                if dev.is_simulator() {
                    "the CPU simulator"
                } else {
                    "a GPU"
                }
            ),
        ));
    }
    Ok(())
}

fn lend<'a, T: CommElement>(
    comm: &'a Communicator,
    operation: &str,
    name: &str,
    buf: &'a DeviceBuffer<T>,
    range: Range<usize>,
) -> Result<(BufferUse<'a>, (u64, usize))> {
    on_device(comm, operation, name, buf)?;
    check_range(comm, operation, name, buf.len(), &range)?;
    let usage = buf
        .use_on(comm.stream())
        .map_err(|e| wrong_device(comm, operation, name, e))?;
    let size = size_of::<T>();
    let at = (
        usage.ptr() + (range.start * size) as u64,
        range.len() * size,
    );
    Ok((usage, at))
}

fn lend_mut<'a, T: CommElement>(
    comm: &'a Communicator,
    operation: &str,
    name: &str,
    buf: &'a mut DeviceBuffer<T>,
    range: Range<usize>,
) -> Result<(BufferUse<'a>, (u64, usize))> {
    on_device(comm, operation, name, buf)?;
    check_range(comm, operation, name, buf.len(), &range)?;
    let usage = buf
        .use_mut_on(comm.stream())
        .map_err(|e| wrong_device(comm, operation, name, e))?;
    let size = size_of::<T>();
    let at = (
        usage.ptr() + (range.start * size) as u64,
        range.len() * size,
    );
    Ok((usage, at))
}

fn wrong_device(comm: &Communicator, operation: &str, name: &str, e: gpu_host::Error) -> Error {
    match e {
        gpu_host::Error::DeviceMismatch { context } => argument(
            comm,
            operation,
            format!(
                "`{name}` is not on rank {}'s device {}: {context}",
                comm.rank(),
                comm.gpu().ordinal()
            ),
        ),
        other => Error::Gpu(other),
    }
}

fn check_range(
    comm: &Communicator,
    operation: &str,
    name: &str,
    len: usize,
    range: &Range<usize>,
) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(argument(
            comm,
            operation,
            format!("range {range:?} of `{name}` is outside its {len} element(s)"),
        ));
    }
    Ok(())
}

fn check_rank(comm: &Communicator, operation: &str, name: &str, r: usize) -> Result<()> {
    if r >= comm.size() {
        return Err(argument(
            comm,
            operation,
            format!(
                "{name} {r} is not a rank of this world of {} ranks",
                comm.size()
            ),
        ));
    }
    Ok(())
}

fn check_len(comm: &Communicator, operation: &str, message: String, ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(argument(comm, operation, message))
    }
}

fn desc<T: CommElement>(
    kind: OpKind,
    count: usize,
    op: Option<ReduceOp>,
    root: Option<usize>,
) -> OpDesc {
    OpDesc {
        kind,
        dtype: T::DATA_TYPE,
        count: count as u64,
        op,
        root: root.map(|r| r as u32),
    }
}

impl<'a> Group<'a> {
    /// An empty group.
    pub fn new() -> Group<'a> {
        Group::default()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// [`Communicator::all_reduce`], in this group.
    pub fn all_reduce<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        send: &'a DeviceBuffer<T>,
        recv: &'a mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        const OP: &str = "all_reduce";
        let n = send.len();
        check_len(
            comm,
            OP,
            format!("`send` has {n} element(s) but `recv` {}", recv.len()),
            recv.len() == n,
        )?;
        let (u1, s) = lend(comm, OP, "send", send, 0..n)?;
        let (u2, r) = lend_mut(comm, OP, "recv", recv, 0..n)?;
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::AllReduce, n, Some(op), None)),
            T::DATA_TYPE,
            n,
            Some(s),
            Some(r),
            vec![u1, u2],
        );
        Ok(())
    }

    /// [`Communicator::all_reduce_in_place`], in this group.
    pub fn all_reduce_in_place<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        buf: &'a mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let n = buf.len();
        let (u, at) = lend_mut(comm, "all_reduce", "buf", buf, 0..n)?;
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::AllReduce, n, Some(op), None)),
            T::DATA_TYPE,
            n,
            Some(at),
            Some(at),
            vec![u],
        );
        Ok(())
    }

    /// [`Communicator::reduce`], in this group.
    pub fn reduce<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        send: &'a DeviceBuffer<T>,
        recv: Option<&'a mut DeviceBuffer<T>>,
        op: ReduceOp,
        root: usize,
    ) -> Result<()> {
        const OP: &str = "reduce";
        check_rank(comm, OP, "root", root)?;
        let n = send.len();
        let (u1, s) = lend(comm, OP, "send", send, 0..n)?;
        let mut uses = vec![u1];
        let r = match recv {
            Some(recv) => {
                check_len(
                    comm,
                    OP,
                    format!("`send` has {n} element(s) but `recv` {}", recv.len()),
                    recv.len() == n,
                )?;
                let (u2, r) = lend_mut(comm, OP, "recv", recv, 0..n)?;
                uses.push(u2);
                Some(r)
            }
            None if comm.rank() == root => {
                return Err(argument(
                    comm,
                    OP,
                    format!("rank {root} is the root and needs a `recv` buffer"),
                ));
            }
            None => None,
        };
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::Reduce, n, Some(op), Some(root))),
            T::DATA_TYPE,
            n,
            Some(s),
            r,
            uses,
        );
        Ok(())
    }

    /// [`Communicator::broadcast`], in this group.
    pub fn broadcast<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        buf: &'a mut DeviceBuffer<T>,
        root: usize,
    ) -> Result<()> {
        check_rank(comm, "broadcast", "root", root)?;
        let n = buf.len();
        let (u, at) = lend_mut(comm, "broadcast", "buf", buf, 0..n)?;
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::Broadcast, n, None, Some(root))),
            T::DATA_TYPE,
            n,
            Some(at),
            Some(at),
            vec![u],
        );
        Ok(())
    }

    /// [`Communicator::all_gather`], in this group.
    pub fn all_gather<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        send: &'a DeviceBuffer<T>,
        recv: &'a mut DeviceBuffer<T>,
    ) -> Result<()> {
        const OP: &str = "all_gather";
        let n = send.len();
        let want = n.checked_mul(comm.size());
        check_len(
            comm,
            OP,
            format!(
                "`send` has {n} element(s), so `recv` needs {n} x {} ranks, but has {}",
                comm.size(),
                recv.len()
            ),
            want == Some(recv.len()),
        )?;
        let total = recv.len();
        let (u1, s) = lend(comm, OP, "send", send, 0..n)?;
        let (u2, r) = lend_mut(comm, OP, "recv", recv, 0..total)?;
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::AllGather, n, None, None)),
            T::DATA_TYPE,
            n,
            Some(s),
            Some(r),
            vec![u1, u2],
        );
        Ok(())
    }

    /// [`Communicator::reduce_scatter`], in this group.
    pub fn reduce_scatter<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        send: &'a DeviceBuffer<T>,
        recv: &'a mut DeviceBuffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        const OP: &str = "reduce_scatter";
        let m = recv.len();
        let want = m.checked_mul(comm.size());
        check_len(
            comm,
            OP,
            format!(
                "`recv` has {m} element(s), so `send` needs {m} x {} ranks, but has {}",
                comm.size(),
                send.len()
            ),
            want == Some(send.len()),
        )?;
        let total = send.len();
        let (u1, s) = lend(comm, OP, "send", send, 0..total)?;
        let (u2, r) = lend_mut(comm, OP, "recv", recv, 0..m)?;
        self.push(
            comm,
            What::Coll(desc::<T>(OpKind::ReduceScatter, total, Some(op), None)),
            T::DATA_TYPE,
            total,
            Some(s),
            Some(r),
            vec![u1, u2],
        );
        Ok(())
    }

    /// Sends `buf[range]` to rank `peer` (which receives the same number of elements).
    pub fn send<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        buf: &'a DeviceBuffer<T>,
        range: Range<usize>,
        peer: usize,
    ) -> Result<()> {
        check_rank(comm, "send", "peer", peer)?;
        let n = range.len();
        let (u, at) = lend(comm, "send", "buf", buf, range)?;
        self.push(
            comm,
            What::Send { peer },
            T::DATA_TYPE,
            n,
            Some(at),
            None,
            vec![u],
        );
        Ok(())
    }

    /// Receives into `buf[range]` what rank `peer` sends.
    pub fn recv<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        buf: &'a mut DeviceBuffer<T>,
        range: Range<usize>,
        peer: usize,
    ) -> Result<()> {
        check_rank(comm, "recv", "peer", peer)?;
        let n = range.len();
        let (u, at) = lend_mut(comm, "recv", "buf", buf, range)?;
        self.push(
            comm,
            What::Recv { peer },
            T::DATA_TYPE,
            n,
            None,
            Some(at),
            vec![u],
        );
        Ok(())
    }

    /// Receives from several peers into disjoint ranges of one buffer: for each
    /// `(range, peer)` of `parts`, `buf[range]` gets what `peer` sends (the receiving half of
    /// an all-to-all with uneven parts, e.g. the key exchange of a distributed sort). A peer may
    /// appear more than once (its sends are matched in order); the ranges must not overlap.
    pub fn recv_parts<T: CommElement>(
        &mut self,
        comm: &'a Communicator,
        buf: &'a mut DeviceBuffer<T>,
        parts: &[(Range<usize>, usize)],
    ) -> Result<()> {
        const OP: &str = "recv_parts";
        let mut sorted: Vec<&Range<usize>> = Vec::with_capacity(parts.len());
        for (range, peer) in parts {
            check_rank(comm, OP, "peer", *peer)?;
            check_range(comm, OP, "buf", buf.len(), range)?;
            if !range.is_empty() {
                sorted.push(range);
            }
        }
        sorted.sort_by_key(|r| r.start);
        if let Some(w) = sorted.windows(2).find(|w| w[0].end > w[1].start) {
            return Err(argument(
                comm,
                OP,
                format!(
                    "ranges {:?} and {:?} of `buf` overlap; each element can come from one \
                     peer only",
                    w[0], w[1]
                ),
            ));
        }
        let (u, whole) = lend_mut(comm, OP, "buf", buf, 0..buf.len())?;
        let mut uses = vec![u];
        let size = size_of::<T>();
        for (range, peer) in parts {
            let at = (whole.0 + (range.start * size) as u64, range.len() * size);
            self.push(
                comm,
                What::Recv { peer: *peer },
                T::DATA_TYPE,
                range.len(),
                None,
                Some(at),
                std::mem::take(&mut uses),
            );
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        comm: &'a Communicator,
        what: What,
        dtype: DataType,
        count: usize,
        send: Option<(u64, usize)>,
        recv: Option<(u64, usize)>,
        uses: Vec<BufferUse<'a>>,
    ) {
        self.ops.push(Op {
            comm,
            what,
            dtype,
            count,
            send,
            recv,
            _uses: uses,
        });
    }

    /// Queues every operation of the group (on NCCL: inside one group call) and returns once
    /// they are accepted; their results are ready on each communicator's stream (on the
    /// simulator: when this returns).
    pub fn run(self) -> Result<()> {
        let Some(first) = self.ops.first() else {
            return Ok(());
        };
        let simulated = first.comm.is_simulated();
        if self.ops.iter().any(|o| o.comm.is_simulated() != simulated) {
            return Err(Error::Setup(
                "a group mixes simulated and NCCL communicators".into(),
            ));
        }
        for op in &self.ops {
            op.comm.check_usable()?;
        }
        // Number every call and describe it to the hub, which compares the ranks' calls.
        let numbered: Vec<(u64, &Op)> = self
            .ops
            .iter()
            .map(|op| {
                let c = op.comm;
                let n = match op.what {
                    What::Coll(d) => {
                        let seq = c.next_seq();
                        if c.options().check_calls && !simulated {
                            c.link.check(seq, d);
                        }
                        seq
                    }
                    What::Send { peer } | What::Recv { peer } => {
                        let is_send = matches!(op.what, What::Send { .. });
                        let nth = c.next_p2p(peer, is_send);
                        if c.options().check_calls {
                            let (src, dst) = if is_send {
                                (c.rank(), peer)
                            } else {
                                (peer, c.rank())
                            };
                            c.link.check_p2p(P2pDesc {
                                src: src as u32,
                                dst: dst as u32,
                                nth,
                                dtype: op.dtype,
                                count: op.count as u64,
                                is_send,
                            });
                        }
                        nth
                    }
                };
                (n, op)
            })
            .collect();
        if simulated {
            run_simulated(&numbered)
        } else {
            run_nccl(&numbered)
        }
    }
}

fn run_nccl(ops: &[(u64, &Op)]) -> Result<()> {
    let lib = ops[0].1.comm.nccl.as_ref().expect("NCCL communicator").lib;
    // SAFETY: group calls take no arguments; every call below is inside this group.
    unsafe { (lib.group_start)() };
    let mut failed = None;
    for (_, op) in ops {
        if let Err(e) = call_nccl(op) {
            failed = Some(e);
            break;
        }
    }
    // Group end may block (connecting to peers on first use): the watchdogs of the
    // communicators in the group abort them if a rank fails or the timeout passes meanwhile.
    let mut guards = Vec::new();
    for (_, op) in ops {
        if let Some(n) = &op.comm.nccl {
            guards.push(n.busy("ncclGroupEnd"));
        }
    }
    // SAFETY: closes the group opened above.
    let end = unsafe { (lib.group_end)() };
    drop(guards);
    if let Some(e) = failed {
        return Err(e);
    }
    let comm = ops[0].1.comm;
    if end != SUCCESS && end != IN_PROGRESS {
        return Err(comm.nccl_error("ncclGroupEnd", lib.describe(end, None)));
    }
    let mut settled: Vec<*const Communicator> = Vec::new();
    for (_, op) in ops {
        let c = op.comm as *const Communicator;
        if !settled.contains(&c) {
            settled.push(c);
            op.comm.settle("for NCCL to accept the queued calls")?;
        }
    }
    Ok(())
}

fn call_nccl(op: &Op) -> Result<()> {
    let comm = op.comm;
    let n = comm.nccl.as_ref().expect("NCCL communicator");
    comm.bind()?;
    let stream = comm
        .stream()
        .cuda_stream()
        .expect("NCCL communicators are on GPUs")
        .cu_stream()
        .cast::<std::ffi::c_void>();
    let send = op
        .send
        .map_or(std::ptr::null(), |(p, _)| p as *const std::ffi::c_void);
    let recv = op
        .recv
        .map_or(std::ptr::null_mut(), |(p, _)| p as *mut std::ffi::c_void);
    let dt = op.dtype as i32;
    let h = n.handle;
    let (name, r) = match op.what {
        What::Coll(d) => {
            let red = d.op.map_or(0, |o| o as i32);
            let root = d.root.map_or(0, |r| r as i32);
            // SAFETY: the addresses are of live buffers on this communicator's device, borrowed
            // by the group (sizes checked above: `count` elements on the send side and what the
            // collective writes on the receive side); the handle is live.
            unsafe {
                match d.kind {
                    OpKind::AllReduce => (
                        "ncclAllReduce",
                        (n.lib.all_reduce)(send, recv, op.count, dt, red, h, stream),
                    ),
                    OpKind::Reduce => (
                        "ncclReduce",
                        (n.lib.reduce)(send, recv, op.count, dt, red, root, h, stream),
                    ),
                    OpKind::Broadcast => (
                        "ncclBroadcast",
                        (n.lib.broadcast)(send, recv, op.count, dt, root, h, stream),
                    ),
                    OpKind::AllGather => (
                        "ncclAllGather",
                        (n.lib.all_gather)(send, recv, op.count, dt, h, stream),
                    ),
                    OpKind::ReduceScatter => {
                        let per_rank = op.count / comm.size();
                        (
                            "ncclReduceScatter",
                            (n.lib.reduce_scatter)(send, recv, per_rank, dt, red, h, stream),
                        )
                    }
                    OpKind::Barrier => unreachable!("barriers go through the hub"),
                }
            }
        }
        // SAFETY: as above, `count` elements at each address.
        What::Send { peer } => ("ncclSend", unsafe {
            (n.lib.send)(send, op.count, dt, peer as i32, h, stream)
        }),
        // SAFETY: as above.
        What::Recv { peer } => ("ncclRecv", unsafe {
            (n.lib.recv)(recv, op.count, dt, peer as i32, h, stream)
        }),
    };
    if r != SUCCESS && r != IN_PROGRESS {
        return Err(comm.nccl_error(name, n.lib.describe(r, Some(h))));
    }
    Ok(())
}

/// Reads `bytes` at a simulated buffer's host address.
fn host_bytes(at: (u64, usize)) -> Vec<u8> {
    if at.1 == 0 {
        return Vec::new();
    }
    // SAFETY: on the simulator a buffer's address is its host memory, borrowed by the group
    // for the whole call; the range was checked against its length.
    unsafe { std::slice::from_raw_parts(at.0 as *const u8, at.1) }.to_vec()
}

/// Writes `data` to a simulated buffer's host address.
fn write_host(at: (u64, usize), data: &[u8]) {
    let n = at.1.min(data.len());
    if n == 0 {
        return;
    }
    // SAFETY: as in `host_bytes`, and the buffer is borrowed mutably by the group.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at.0 as *mut u8, n) };
}

fn run_simulated(ops: &[(u64, &Op)]) -> Result<()> {
    // Hand in everything first (sends and contributions never wait), then collect.
    for &(n, op) in ops {
        match op.what {
            What::Coll(d) => {
                op.comm
                    .link
                    .contribute(n, d, op.send.map(host_bytes).unwrap_or_default())
            }
            What::Send { peer } => {
                op.comm
                    .link
                    .post(peer, n, op.send.map(host_bytes).unwrap_or_default())
            }
            What::Recv { .. } => {}
        }
    }
    for &(n, op) in ops {
        let comm = op.comm;
        let deadline = Instant::now() + comm.options().timeout;
        let data = match op.what {
            What::Coll(_) => comm
                .link
                .collect(n, deadline)
                .map_err(comm.wait_error("for the other ranks' part of a collective"))?,
            What::Recv { peer } => comm
                .link
                .take(peer, n, deadline)
                .map_err(comm.wait_error("for a transfer from another rank"))?,
            What::Send { .. } => continue,
        };
        if let Some(at) = op.recv {
            write_host(at, &data);
        }
    }
    Ok(())
}
