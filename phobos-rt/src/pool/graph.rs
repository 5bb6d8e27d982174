//! Recorded launch sequences: record the launches of a step once (a
//! model's decode step), replay them with one wake-up of the pool and a
//! barrier between launches.

use super::job::Task;
use crate::Result;
use crate::host::GridIndex;

/// Collects launches for a [`Graph`]; see [`HostDevice::record`](crate::HostDevice::record).
pub struct Recorder<'a> {
    launches: Vec<(usize, Box<Task<'a>>)>,
}

/// A recorded sequence of launches. Each replay runs them in order, every
/// launch finished before the next starts, as separate launches would.
pub struct Graph<'a> {
    launches: Vec<(usize, Box<Task<'a>>)>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let programs: Vec<usize> = self.launches.iter().map(|(total, _)| *total).collect();
        f.debug_struct("Graph")
            .field("programs", &programs)
            .finish()
    }
}

impl<'a> Recorder<'a> {
    pub(crate) fn new() -> Recorder<'a> {
        Recorder {
            launches: Vec::new(),
        }
    }

    /// Records a launch of `program([pid0, pid1, pid2])` over `grid` (as
    /// [`crate::host::try_run_grid`]); errors now when the grid is too large.
    pub fn launch(
        &mut self,
        grid: [usize; 3],
        program: impl Fn([i32; 3]) -> Result<()> + Sync + 'a,
    ) -> Result<()> {
        let index = GridIndex::new(grid)?;
        let total = index.total();
        self.launches.push((
            total,
            Box::new(move |linear| program(index.program_id(linear))),
        ));
        Ok(())
    }

    pub(crate) fn finish(self) -> Graph<'a> {
        Graph {
            launches: self.launches,
        }
    }
}

impl Graph<'_> {
    /// Number of recorded launches.
    pub fn len(&self) -> usize {
        self.launches.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty()
    }

    /// Runs every recorded launch once, in order, on the host pool; the
    /// first failing launch's error is returned and later ones do not run.
    pub fn replay(&self) -> Result<()> {
        let steps: Vec<(usize, &Task<'_>)> = self
            .launches
            .iter()
            .map(|(total, task)| (*total, &**task))
            .collect();
        super::global().run_steps(&steps)
    }
}
