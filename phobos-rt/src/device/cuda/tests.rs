use super::*;

/// On a machine without the driver (this project's build machines), opening
/// a device fails with an error naming what is missing; with one, it works
/// and reports a chip the selection understands.
#[test]
fn opening_a_device_fails_clearly_or_works() {
    // SAFETY: only tries to open the library.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    match CudaDevice::new(0) {
        Ok(device) => {
            assert!(present);
            assert!(select::chip_number(&device.info().chip).is_some());
            assert_eq!(device, CudaDevice::new(0).unwrap());
        }
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            if !present {
                assert!(reason.contains("no CUDA driver library found"), "{reason}");
                assert!(reason.contains("libcuda.so"), "{reason}");
            } else {
                assert!(
                    reason.contains("no CUDA device") || reason.contains("too old"),
                    "{reason}"
                );
            }
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
    // An ordinal far past any machine's devices is never opened.
    assert!(CudaDevice::new(1 << 20).is_err());
}
