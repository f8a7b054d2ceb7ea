//! Collectives, transfers and failures on simulated devices: ranks as threads (one process)
//! and ranks over TCP (the multi-process path, here with one thread per rank), with NCCL's
//! semantics checked against plain CPU results.

use std::time::{Duration, Instant};

use gpu_distributed::{
    CommOptions, Communicator, DataType, Error, Group, ReduceOp, Rendezvous, run_ranks,
};
use gpu_host::{DeviceBuffer, Gpu};
use half::bf16;

fn sims(n: usize) -> Vec<Gpu> {
    (0..n).map(|i| Gpu::simulator_device(i).unwrap()).collect()
}

/// Rank `r`'s test data: `len` values depending on the rank and index.
fn data(r: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| (r * 1000 + i) as f32 * 0.5).collect()
}

/// Two or more GPUs with NCCL, or `None` after a visible SKIPPED line.
fn gpus_or_skip(test: &str) -> Option<Vec<Gpu>> {
    match gpu_distributed::nccl_gpu_count() {
        Ok(_) => Some(Gpu::all().expect("opening the GPUs")),
        Err(why) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test} on GPUs with NCCL: {why}");
            None
        }
    }
}

#[test]
fn collectives_match_cpu_results() {
    check_collectives(&sims(4));
    if let Some(gpus) = gpus_or_skip("collectives_match_cpu_results") {
        check_collectives(&gpus);
    }
}

#[test]
fn peer_copies_between_devices() {
    let mut sets = vec![sims(2)];
    sets.extend(gpus_or_skip("peer_copies_between_devices"));
    for gpus in sets {
        let (a, b) = (&gpus[0], &gpus[1]);
        if a.can_access_peer(b).unwrap() {
            a.enable_peer_access(b).unwrap();
            a.enable_peer_access(b).unwrap(); // again: a no-op
        }
        let src = a.to_device(&(0..100_000u32).collect::<Vec<_>>()).unwrap();
        let mut dst = b.alloc_zeroed::<u32>(100_000).unwrap();
        dst.copy_from_device(&src).unwrap();
        drop(src); // the copy is ordered before the free
        assert_eq!(dst.to_vec().unwrap(), (0..100_000u32).collect::<Vec<_>>());
        // a range of one device's buffer into the middle of another's
        let src = a.to_device(&[7u32, 8, 9, 10]).unwrap();
        dst.copy_range_from_device(5, &src, 1..3).unwrap();
        assert_eq!(dst.to_vec().unwrap()[4..8], [4, 8, 9, 7]);
    }
}

fn check_collectives(gpus: &[Gpu]) {
    let n = gpus.len();
    let len = 1000;
    let results = run_ranks(gpus, |c| {
        let r = c.rank();
        let g = c.gpu();
        let x = g.to_device(&data(r, len))?;
        // all_reduce: sum, max, avg
        let mut y = g.alloc_zeroed::<f32>(len)?;
        c.all_reduce(&x, &mut y, ReduceOp::Sum)?;
        c.synchronize()?;
        let sum: Vec<f32> = (0..len)
            .map(|i| (0..n).map(|q| data(q, len)[i]).sum())
            .collect();
        assert_eq!(y.to_vec()?, sum);
        c.all_reduce(&x, &mut y, ReduceOp::Max)?;
        assert_eq!(y.to_vec()?, data(n - 1, len));
        let mut z = g.to_device(&data(r, len))?;
        c.all_reduce_in_place(&mut z, ReduceOp::Avg)?;
        let avg: Vec<f32> = sum.iter().map(|s| s / n as f32).collect();
        assert_eq!(z.to_vec()?, avg);
        // integers wrap like NCCL's, bf16 reduce too
        let mut i = g.to_device(&[i64::MAX, r as i64])?;
        c.all_reduce_in_place(&mut i, ReduceOp::Sum)?;
        let rank_sum = (n * (n - 1) / 2) as i64;
        assert_eq!(i.to_vec()?, [i64::MAX.wrapping_mul(n as i64), rank_sum]);
        let mut h = g.to_device(&[bf16::from_f32(r as f32 + 1.0)])?;
        c.all_reduce_in_place(&mut h, ReduceOp::Prod)?;
        assert_eq!(h.to_vec()?[0].to_f32(), (1..=n).product::<usize>() as f32);
        // reduce to the last rank
        let root = n - 1;
        let mut at_root = g.alloc_zeroed::<f32>(len)?;
        c.reduce(&x, (r == root).then_some(&mut at_root), ReduceOp::Sum, root)?;
        c.synchronize()?;
        assert_eq!(
            at_root.to_vec()?,
            if r == root {
                sum.clone()
            } else {
                vec![0.0; len]
            }
        );
        // broadcast from the last rank
        let mut b = g.to_device(&data(r, len))?;
        c.broadcast(&mut b, root)?;
        c.synchronize()?;
        assert_eq!(b.to_vec()?, data(root, len));
        // all_gather: rank order
        let mut all = g.alloc_zeroed::<f32>(len * n)?;
        c.all_gather(&x, &mut all)?;
        assert_eq!(
            all.to_vec()?,
            (0..n).flat_map(|q| data(q, len)).collect::<Vec<_>>()
        );
        // reduce_scatter: rank r gets part r of the sum
        let big = g.to_device(&data(r, len * n))?;
        let mut part = g.alloc_zeroed::<f32>(len)?;
        c.reduce_scatter(&big, &mut part, ReduceOp::Sum)?;
        let want: Vec<f32> = (r * len..(r + 1) * len)
            .map(|i| (0..n).map(|q| data(q, len * n)[i]).sum())
            .collect();
        assert_eq!(part.to_vec()?, want);
        // a ring of transfers in one group (both directions at once)
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        let mut got = g.alloc_zeroed::<f32>(len)?;
        let mut grp = Group::new();
        grp.send(c, &x, 0..len, next)?;
        grp.recv(c, &mut got, 0..len, prev)?;
        grp.run()?;
        c.synchronize()?;
        assert_eq!(got.to_vec()?, data(prev, len));
        // an all-to-all with uneven (some empty) parts, itself included: rank `a` sends
        // `part(a, b)` elements from offset 10·b to rank `b`, which stacks them in rank order
        let part = |a: usize, b: usize| (a + 2 * b) % 4;
        let incoming: usize = (0..n).map(|q| part(q, r)).sum();
        let mut stacked = g.alloc_zeroed::<f32>(incoming)?;
        let mut grp = Group::new();
        let mut parts = Vec::new();
        for q in 0..n {
            grp.send(c, &x, 10 * q..10 * q + part(r, q), q)?;
            let at: usize = (0..q).map(|p| part(p, r)).sum();
            parts.push((at..at + part(q, r), q));
        }
        grp.recv_parts(c, &mut stacked, &parts)?;
        grp.run()?;
        c.synchronize()?;
        let want: Vec<f32> = (0..n)
            .flat_map(|q| data(q, len)[10 * r..10 * r + part(q, r)].to_vec())
            .collect();
        assert_eq!(stacked.to_vec()?, want);
        c.barrier()?;
        Ok(r)
    })
    .unwrap();
    let ranks: Vec<usize> = results.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(ranks, (0..n).collect::<Vec<_>>());
}

#[test]
fn one_thread_drives_every_device_in_groups() {
    let gpus = sims(3);
    let comms = Communicator::for_devices(&gpus).unwrap();
    for b in &sum_of_ranks(&comms) {
        assert_eq!(b.to_vec().unwrap(), [6; 5]);
    }
}

/// Every rank's `[rank + 1; 5]` summed over the ranks by one group of all_reduces (the
/// results, one buffer per rank, after the communicators' synchronization).
fn sum_of_ranks(comms: &[Communicator]) -> Vec<DeviceBuffer<u32>> {
    let mut bufs: Vec<_> = comms
        .iter()
        .map(|c| c.gpu().to_device(&[c.rank() as u32 + 1; 5]).unwrap())
        .collect();
    let mut g = Group::new();
    for (c, b) in comms.iter().zip(bufs.iter_mut()) {
        g.all_reduce_in_place(c, b, ReduceOp::Sum).unwrap();
    }
    g.run().unwrap();
    for c in comms {
        c.synchronize().unwrap();
    }
    bufs
}

#[test]
fn collectives_run_on_a_stream_of_the_callers_choice() {
    let check = |gpus: &[Gpu]| {
        // A high-priority stream of each communicator's own, from the options.
        let opts = CommOptions {
            high_priority_stream: true,
            ..CommOptions::default()
        };
        let comms = Communicator::for_devices_with(gpus, opts).unwrap();
        for c in &comms {
            assert!(!c.stream().same_as(c.gpu().default_stream()));
        }
        for b in &sum_of_ranks(&comms) {
            assert_eq!(b.to_vec().unwrap(), [3; 5]);
        }
        // set_stream takes a stream of the communicator's device only.
        let mut comms = comms;
        let other = comms[1].gpu().new_stream().unwrap();
        let e = comms[0].set_stream(other).unwrap_err();
        assert!(
            matches!(e, Error::Argument { rank: 0, .. }) && e.to_string().contains("device"),
            "{e}"
        );
        let own = comms[0].gpu().new_stream().unwrap();
        comms[0].set_stream(own.clone()).unwrap();
        assert!(comms[0].stream().same_as(&own));
    };
    check(&sims(2));
    match gpus_or_skip("collectives_run_on_a_stream_of_the_callers_choice") {
        Some(gpus) if gpus.len() >= 2 => check(&gpus[..2]),
        Some(gpus) => eprintln!(
            "SKIPPED collectives_run_on_a_stream_of_the_callers_choice on GPUs: {} GPU(s), it \
             needs 2",
            gpus.len()
        ),
        None => {}
    }
}

#[test]
fn mismatched_lengths_fail_every_rank() {
    let opts = Duration::from_secs(20);
    let start = Instant::now();
    let results = run_ranks(&sims(3), |c| {
        let len = if c.rank() == 1 { 7 } else { 8 };
        let mut x = c.gpu().alloc_zeroed::<f32>(len)?;
        c.all_reduce_in_place(&mut x, ReduceOp::Sum)
    })
    .unwrap();
    assert!(start.elapsed() < opts, "reported within the timeout");
    for (r, res) in results.iter().enumerate() {
        let e = res.as_ref().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::RankFailed { .. }), "rank {r}: {text}");
        assert!(text.contains("does not match"), "rank {r}: {text}");
        assert!(
            text.contains("7 x f32") && text.contains("8 x f32"),
            "rank {r}: {text}"
        );
    }
}

#[test]
fn a_panicking_rank_is_named_on_the_others() {
    let results = run_ranks(&sims(3), |c| {
        if c.rank() == 2 {
            panic!("planted failure before the collective");
        }
        let mut x = c.gpu().alloc_zeroed::<u32>(4)?;
        c.all_reduce_in_place(&mut x, ReduceOp::Sum)?;
        Ok(())
    })
    .unwrap();
    for (r, res) in results.iter().enumerate() {
        match res {
            Err(Error::RankFailed {
                failed_rank: 2,
                reason,
                ..
            }) => assert!(reason.contains("planted failure"), "rank {r}: {reason}"),
            other => panic!("rank {r}: {other:?}"),
        }
    }
}

#[test]
fn a_rank_that_leaves_early_is_named() {
    let results = run_ranks(&sims(2), |c| {
        let mut x = c.gpu().alloc_zeroed::<u64>(4)?;
        c.all_reduce_in_place(&mut x, ReduceOp::Sum)?;
        if c.rank() == 0 {
            return Ok(()); // skips the second collective
        }
        c.all_reduce_in_place(&mut x, ReduceOp::Sum)
    })
    .unwrap();
    match &results[1] {
        Err(e @ Error::RankFailed { failed_rank: 0, .. }) => {
            assert!(e.to_string().contains("finished"), "{e}")
        }
        other => panic!("rank 1: {other:?}"),
    }
}

#[test]
fn a_silent_rank_times_out_instead_of_hanging() {
    let opts = CommOptions {
        timeout: Duration::from_millis(500),
        ..CommOptions::default()
    };
    let comms = Communicator::for_devices_with(&sims(2), opts).unwrap();
    let mut x = comms[0].gpu().alloc_zeroed::<f32>(3).unwrap();
    let start = Instant::now();
    let e = comms[0]
        .all_reduce_in_place(&mut x, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { rank: 0, .. }), "{e}");
    assert!(start.elapsed() < Duration::from_secs(10));
    // and the other rank learns it
    let mut y = comms[1].gpu().alloc_zeroed::<f32>(3).unwrap();
    let e = comms[1]
        .all_reduce_in_place(&mut y, ReduceOp::Sum)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::RankFailed {
                rank: 1,
                failed_rank: 0,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_arguments_are_refused_before_anything_is_sent() {
    let gpus = sims(2);
    let comms = Communicator::for_devices(&gpus).unwrap();
    let c = &comms[0];
    let x = c.gpu().alloc_zeroed::<f32>(4).unwrap();
    let mut short = c.gpu().alloc_zeroed::<f32>(3).unwrap();
    let e = c.all_reduce(&x, &mut short, ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, Error::Argument { rank: 0, .. }), "{e}");
    assert!(
        e.to_string()
            .contains("`send` has 4 element(s) but `recv` 3"),
        "{e}"
    );
    let mut gathered = c.gpu().alloc_zeroed::<f32>(7).unwrap();
    let e = c.all_gather(&x, &mut gathered).unwrap_err();
    assert!(e.to_string().contains("needs 4 x 2 ranks"), "{e}");
    let e = c.send(&x, 5).unwrap_err();
    assert!(e.to_string().contains("peer 5 is not a rank"), "{e}");
    let mut b = c.gpu().alloc_zeroed::<f32>(4).unwrap();
    let e = c.broadcast(&mut b, 2).unwrap_err();
    assert!(e.to_string().contains("root 2"), "{e}");
    let mut two = c.gpu().alloc_zeroed::<f32>(4).unwrap();
    let mut g = Group::new();
    let e = g
        .recv_parts(c, &mut two, &[(0..3, 0), (2..4, 1)])
        .unwrap_err();
    assert!(e.to_string().contains("ranges 0..3 and 2..4"), "{e}");
    drop(g);
    let mut g = Group::new();
    let e = g.recv_parts(c, &mut two, &[(0..5, 1)]).unwrap_err();
    assert!(e.to_string().contains("range 0..5 of `buf`"), "{e}");
    drop(g);
    // a buffer of rank 1's device on rank 0
    let mut other = gpus[1].alloc_zeroed::<f32>(4).unwrap();
    let e = c
        .all_reduce_in_place(&mut other, ReduceOp::Sum)
        .unwrap_err();
    assert!(e.to_string().contains("not on rank 0's device 0"), "{e}");
    // nothing reached the hub: both ranks still run a matching collective
    drop(comms);
}

#[test]
fn ranks_meet_over_tcp() {
    let port = gpu_distributed::launch::free_port().unwrap();
    let n = 3;
    let outs: Vec<Vec<u32>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|rank| {
                s.spawn(move || {
                    let rdv = Rendezvous {
                        rank,
                        world_size: n,
                        local_rank: rank,
                        master_addr: "127.0.0.1".into(),
                        master_port: port,
                    };
                    let gpu = Gpu::simulator_device(rank).unwrap();
                    let c = Communicator::join(&gpu, &rdv, CommOptions::default()).unwrap();
                    let x = gpu.to_device(&[rank as u32 * 10; 4]).unwrap();
                    let mut all = gpu.alloc_zeroed::<u32>(4 * n).unwrap();
                    c.all_gather(&x, &mut all).unwrap();
                    let mut from_prev = gpu.alloc_zeroed::<u32>(4).unwrap();
                    let mut g = Group::new();
                    g.send(&c, &x, 0..4, (rank + 1) % n).unwrap();
                    g.recv(&c, &mut from_prev, 0..4, (rank + n - 1) % n)
                        .unwrap();
                    g.run().unwrap();
                    let mut v = all.to_vec().unwrap();
                    v.extend(from_prev.to_vec().unwrap());
                    v
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (rank, v) in outs.iter().enumerate() {
        let prev = ((rank + n - 1) % n) as u32 * 10;
        assert_eq!(&v[..12], &[0, 0, 0, 0, 10, 10, 10, 10, 20, 20, 20, 20]);
        assert_eq!(&v[12..], &[prev; 4]);
    }
}

#[test]
fn element_types_are_nccls() {
    assert_eq!(DataType::Bf16.size(), 2);
    assert_eq!(
        <bf16 as gpu_distributed::CommElement>::DATA_TYPE,
        DataType::Bf16
    );
    assert_eq!(<u8 as gpu_distributed::CommElement>::DATA_TYPE as i32, 1);
    assert_eq!(<f64 as gpu_distributed::CommElement>::DATA_TYPE as i32, 8);
}
