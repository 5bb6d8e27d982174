//! Timing work on the device with CUDA events (the GPU's own clock, so
//! host-side launch overhead and scheduling noise stay out).

use cudarc::driver::{CudaEvent, sys};

use super::CudaDevice;
use super::open::driver_error;
use crate::Result;

/// Times what is queued between [`EventTimer::start`] and
/// [`EventTimer::stop_ms`] on a device's stream.
pub struct EventTimer {
    device: CudaDevice,
    start: CudaEvent,
    end: CudaEvent,
}

impl EventTimer {
    /// Two timing events on `device`.
    pub fn new(device: &CudaDevice) -> Result<EventTimer> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = || {
            device
                .inner
                .ctx
                .new_event(flags)
                .map_err(|e| driver_error("cuEventCreate", e))
        };
        Ok(EventTimer {
            device: device.clone(),
            start: event()?,
            end: event()?,
        })
    }

    /// Marks the start on the stream.
    pub fn start(&self) -> Result<()> {
        self.start
            .record(&self.device.inner.stream)
            .map_err(|e| driver_error("cuEventRecord", e))
    }

    /// Marks the end, waits for it, and returns the milliseconds between.
    pub fn stop_ms(&self) -> Result<f32> {
        self.end
            .record(&self.device.inner.stream)
            .map_err(|e| driver_error("cuEventRecord", e))?;
        self.end
            .synchronize()
            .map_err(|e| driver_error("cuEventSynchronize", e))?;
        self.start
            .elapsed_ms(&self.end)
            .map_err(|e| driver_error("cuEventElapsedTime", e))
    }

    /// Runs `work` once to warm up, then `reps` times between the events;
    /// the mean milliseconds per run.
    pub fn time_ms(&self, reps: u32, mut work: impl FnMut() -> Result<()>) -> Result<f32> {
        work()?;
        self.start()?;
        for _ in 0..reps.max(1) {
            work()?;
        }
        Ok(self.stop_ms()? / reps.max(1) as f32)
    }
}
