//! A CPU-side model of the `@pipeline` schedule, run on the event
//! sequence read back from the emitted MLIR: for every trip count it
//! replays prologue and iterations and checks that each read of a staged
//! half sees that iteration's tile, landed and published by a barrier,
//! that no half is refilled before a barrier ends its last reads, that
//! the next tile is still in flight when the body starts (the point of
//! pipelining) and that no copy is outstanding after the loop.
//!
//! The model is conservative about the narrow-group copies: both the
//! async copy and its synchronous fallback branch count as writes.

use std::collections::{HashMap, HashSet};

/// One schedule-relevant operation, in emission order.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Event {
    /// `nvgpu.device_async_copy` into staged buffer `buf`.
    AsyncCopy {
        buf: u32,
    },
    /// A plain `memref.store` into staged buffer `buf`.
    SyncWrite {
        buf: u32,
    },
    Commit,
    Wait {
        pending: usize,
    },
    Barrier,
    /// A `memref.load` of staged buffer `buf` (in the loop body).
    Read {
        buf: u32,
    },
}

/// The pipelined loop's events: before its `scf.for` and inside it.
#[derive(Debug)]
pub(super) struct Schedule {
    pub prologue: Vec<Event>,
    pub iteration: Vec<Event>,
}

/// The shared buffer a line addresses (`%shN[`), if any.
fn shared_buffer(line: &str) -> Option<u32> {
    let at = line.find("%sh")? + 3;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if !line[at + digits.len()..].starts_with('[') {
        return None;
    }
    digits.parse().ok()
}

fn event(line: &str) -> Option<Event> {
    let l = line.trim();
    if l.contains("nvgpu.device_async_copy") {
        // The destination is the second memref operand.
        let dst = &l[l.find("], ")? + 3..];
        return Some(Event::AsyncCopy {
            buf: shared_buffer(dst)?,
        });
    }
    if l.contains("nvgpu.device_async_create_group") {
        return Some(Event::Commit);
    }
    if l.starts_with("nvgpu.device_async_wait") {
        let at = l.find("numGroups = ")? + "numGroups = ".len();
        let n: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
        return Some(Event::Wait {
            pending: n.parse().ok()?,
        });
    }
    if l == "gpu.barrier" {
        return Some(Event::Barrier);
    }
    if l.contains("memref.store") {
        return shared_buffer(l).map(|buf| Event::SyncWrite { buf });
    }
    if l.contains("memref.load") {
        return shared_buffer(l).map(|buf| Event::Read { buf });
    }
    None
}

/// Reads the schedule of the (single) pipelined loop out of `mlir`.
pub(super) fn extract(mlir: &str) -> Schedule {
    let lines: Vec<&str> = mlir.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.contains("scf.for") && l.contains("iter_args(%half"))
        .expect("no pipelined loop in the MLIR");
    let indent = lines[header].len() - lines[header].trim_start().len();
    let end = header
        + lines[header..]
            .iter()
            .position(|l| l.len() - l.trim_start().len() == indent && l.trim() == "}")
            .expect("unclosed pipelined loop");
    let prologue: Vec<Event> = lines[..header].iter().filter_map(|l| event(l)).collect();
    let staged: HashSet<u32> = prologue
        .iter()
        .filter_map(|e| match e {
            Event::AsyncCopy { buf } | Event::SyncWrite { buf } => Some(*buf),
            _ => None,
        })
        .collect();
    let keep = |e: &Event| match e {
        Event::AsyncCopy { buf } | Event::SyncWrite { buf } | Event::Read { buf } => {
            staged.contains(buf)
        }
        _ => true,
    };
    Schedule {
        prologue: prologue.iter().filter(|e| keep(e)).cloned().collect(),
        iteration: lines[header + 1..end]
            .iter()
            .filter_map(|l| event(l))
            .filter(keep)
            .collect(),
    }
}

/// One half of one staged buffer.
#[derive(Default, Clone)]
struct Half {
    /// The iteration whose tile was last written here.
    holds: Option<usize>,
    /// Commit groups (by index; `None` = not yet committed) with copies
    /// into this half that have not been waited for.
    in_flight: Vec<Option<usize>>,
    /// Written (or landed) but not yet published to the block by a barrier.
    unpublished: bool,
    /// Read since the last barrier.
    read: bool,
}

/// Replays `schedule` for a loop of `trips` iterations; the first
/// violation, described.
pub(super) fn check(schedule: &Schedule, trips: usize) -> Result<(), String> {
    let mut halves: HashMap<(u32, usize), Half> = HashMap::new();
    let mut committed = 0usize;
    run(&mut halves, &mut committed, &schedule.prologue, None, trips)?;
    for k in 0..trips {
        run(
            &mut halves,
            &mut committed,
            &schedule.iteration,
            Some(k),
            trips,
        )?;
        let next_in_flight = k + 1 < trips
            && halves
                .iter()
                .any(|((_, half), h)| *half == (k + 1) % 2 && !h.in_flight.is_empty());
        let any_async = schedule
            .iteration
            .iter()
            .any(|e| matches!(e, Event::AsyncCopy { .. }));
        if any_async && k + 1 < trips && !next_in_flight {
            return Err(format!(
                "iteration {k} of {trips}: the next tile was waited for before the body (no overlap)"
            ));
        }
    }
    if halves.values().any(|h| !h.in_flight.is_empty()) {
        return Err(format!(
            "loop of {trips}: copies still in flight after the loop"
        ));
    }
    Ok(())
}

/// Replays `events` as the prologue (`k` = None) or iteration `k`.
fn run(
    halves: &mut HashMap<(u32, usize), Half>,
    committed: &mut usize,
    events: &[Event],
    k: Option<usize>,
    trips: usize,
) -> Result<(), String> {
    // Writes fill the tile of `fill` into half `fill % 2`; reads want
    // the tile of `k` from half `k % 2`.
    let fill = k.map_or(0, |k| k + 1);
    let writes = fill < trips;
    let at = |what: &str| match k {
        Some(k) => format!("iteration {k} of {trips}: {what}"),
        None => format!("prologue of {trips}: {what}"),
    };
    for e in events {
        match e {
            Event::AsyncCopy { buf } | Event::SyncWrite { buf } if writes => {
                let h = halves.entry((*buf, fill % 2)).or_default();
                if h.read {
                    return Err(at(&format!(
                        "sh{buf} half {} refilled before a barrier ended its reads",
                        fill % 2
                    )));
                }
                h.holds = Some(fill);
                h.unpublished = true;
                if matches!(e, Event::AsyncCopy { .. }) {
                    h.in_flight.push(None);
                }
            }
            Event::AsyncCopy { .. } | Event::SyncWrite { .. } => {}
            Event::Commit => {
                for h in halves.values_mut() {
                    for g in h.in_flight.iter_mut().filter(|g| g.is_none()) {
                        *g = Some(*committed);
                    }
                }
                *committed += 1;
            }
            Event::Wait { pending } => {
                let done = committed.saturating_sub(*pending);
                for h in halves.values_mut() {
                    h.in_flight.retain(|g| !matches!(g, Some(g) if *g < done));
                }
            }
            Event::Barrier => {
                for h in halves.values_mut() {
                    h.read = false;
                    if h.in_flight.is_empty() {
                        h.unpublished = false;
                    }
                }
            }
            Event::Read { buf } => {
                let k = k.ok_or_else(|| at("read of a staged half"))?;
                let h = halves.entry((*buf, k % 2)).or_default();
                if h.holds != Some(k) {
                    return Err(at(&format!(
                        "sh{buf} half {} holds tile {:?}",
                        k % 2,
                        h.holds
                    )));
                }
                if !h.in_flight.is_empty() {
                    return Err(at(&format!("sh{buf} read before its copy landed")));
                }
                if h.unpublished {
                    return Err(at(&format!("sh{buf} read before a barrier published it")));
                }
                h.read = true;
            }
        }
    }
    Ok(())
}
