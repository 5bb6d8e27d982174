use super::*;
use crate::{Error, HostDevice};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

fn counts(pool: &ThreadPool, total: usize) -> Vec<u32> {
    let hits: Vec<AtomicU32> = (0..total).map(|_| AtomicU32::new(0)).collect();
    pool.run(total, &|i| {
        hits[i].fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
    .unwrap();
    hits.into_iter().map(AtomicU32::into_inner).collect()
}

#[test]
fn every_program_runs_exactly_once_at_any_thread_count() {
    for threads in [1, 2, 3, 5] {
        let pool = ThreadPool::new(threads, &[]);
        assert_eq!(pool.threads(), threads);
        for total in [0, 1, 2, 7, 1000, 4099] {
            for _ in 0..3 {
                assert!(
                    counts(&pool, total).iter().all(|&c| c == 1),
                    "{threads} {total}"
                );
            }
        }
    }
}

#[test]
fn parked_workers_wake_up() {
    let pool = ThreadPool::new(3, &[]);
    assert!(counts(&pool, 64).iter().all(|&c| c == 1));
    // Long enough for every worker to stop spinning and park.
    std::thread::sleep(SPIN * 20);
    assert!(counts(&pool, 64).iter().all(|&c| c == 1));
}

#[test]
fn steps_are_separated_by_a_barrier() {
    let pool = ThreadPool::new(4, &[]);
    let n = 513;
    let first: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let second: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let write = |i: usize| {
        first[i].store(i as u32 + 1, Ordering::Relaxed);
        Ok(())
    };
    // Reads an element another program of the first step wrote.
    let read = |i: usize| {
        let other = first[n - 1 - i].load(Ordering::Relaxed);
        second[i].store(other, Ordering::Relaxed);
        Ok(())
    };
    for _ in 0..20 {
        pool.run_steps(&[(n, &write), (n, &read)]).unwrap();
        for (i, value) in second.iter().enumerate() {
            assert_eq!(value.load(Ordering::Relaxed), (n - i) as u32);
        }
        first.iter().for_each(|v| v.store(0, Ordering::Relaxed));
    }
}

#[test]
fn the_first_error_fails_the_launch_and_stops_the_rest() {
    let pool = ThreadPool::new(2, &[]);
    let ran = AtomicUsize::new(0);
    let err = pool
        .run(100_000, &|i| {
            ran.fetch_add(1, Ordering::Relaxed);
            if i == 3 {
                return Err(Error::TileRank { rank: 9, max: 4 });
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(err, Error::TileRank { rank: 9, max: 4 });
    assert!(ran.into_inner() < 100_000);
    // A failed step stops the later steps of a job.
    let later = AtomicUsize::new(0);
    let fail = |_| Err(Error::TileRank { rank: 5, max: 4 });
    let count = |_| {
        later.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    assert!(pool.run_steps(&[(10, &fail), (10, &count)]).is_err());
    assert_eq!(later.into_inner(), 0);
}

#[test]
fn a_launch_inside_a_program_runs_inline() {
    let pool = ThreadPool::new(3, &[]);
    let inner = AtomicUsize::new(0);
    pool.run(8, &|_| {
        pool.run(5, &|_| {
            inner.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    })
    .unwrap();
    assert_eq!(inner.into_inner(), 40);
}

#[test]
fn launches_from_several_threads_at_once() {
    let pool = ThreadPool::new(3, &[]);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for total in [3, 300, 30] {
                    assert!(counts(&pool, total).iter().all(|&c| c == 1));
                }
            });
        }
    });
}

#[test]
fn a_recorded_graph_replays_its_launches_in_order() {
    let dev = HostDevice;
    assert!(dev.threads() >= 1);
    let n = 300;
    let a: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let b: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let graph = dev
        .record(|rec| {
            // a[i] += 1, then b[i] = a[n-1-i] * 10: the second launch sees
            // the whole first one.
            rec.launch([n, 1, 1], |pid| {
                a[pid[0] as usize].fetch_add(1, Ordering::Relaxed);
                Ok(())
            })?;
            rec.launch([10, n / 10, 1], |pid| {
                let i = pid[0] as usize + 10 * pid[1] as usize;
                let value = a[n - 1 - i].load(Ordering::Relaxed);
                b[i].store(value * 10, Ordering::Relaxed);
                Ok(())
            })
        })
        .unwrap();
    assert_eq!(graph.len(), 2);
    assert!(
        a.iter().all(|v| v.load(Ordering::Relaxed) == 0),
        "recording runs nothing"
    );
    for round in 1..=3u32 {
        graph.replay().unwrap();
        assert!(b.iter().all(|v| v.load(Ordering::Relaxed) == round * 10));
    }
    let err = dev
        .record(|rec| rec.launch([1 << 40, 1, 1], |_| Ok(())))
        .unwrap_err();
    assert!(matches!(err, Error::GridTooLarge { .. }));
}
