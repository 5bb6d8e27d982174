use super::*;
use crate::host::{PlainRead, TensorRead, TensorWrite, with_host_slice, with_host_slice_mut};

/// Set in the child process of the abort test.
const ESCAPE_CHILD_ENV: &str = "PHOBOS_TEST_BORROW_ESCAPE_CHILD";

#[test]
fn tensors_are_the_callers_memory() {
    let x: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let mut y = vec![-1f32; 4];
    let (x_ptr, y_ptr) = (x.as_ptr(), y.as_mut_ptr());
    let sum = HostDevice
        .with_borrowed(&x, [2, 3], &mut y, [2, 2], |xt, yt| -> Result<f32> {
            assert_eq!((xt.shape(), yt.shape()), (&[2, 3][..], &[2, 2][..]));
            assert!(xt.is_contiguous() && yt.is_contiguous());
            // Lent in place, not copied: the slices are the caller's.
            let sum = with_host_slice(xt, |s| {
                assert_eq!(s.as_ptr(), x_ptr);
                s.iter().sum::<f32>()
            })?;
            with_host_slice_mut(yt, |s| {
                assert_eq!(s.as_mut_ptr(), y_ptr);
                s.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
            })?;
            assert_eq!(xt.to_vec()?, x);
            assert_eq!(yt.to_vec()?, vec![1.0, 2.0, 3.0, 4.0]);
            yt.copy_from_slice(&[5.0, 6.0, 7.0, 8.0])?;
            Ok(sum)
        })
        .unwrap()
        .unwrap();
    assert_eq!(sum, 15.0);
    assert_eq!(y, vec![5.0, 6.0, 7.0, 8.0]);
}

#[test]
fn a_launch_reads_plain_and_writes_the_output_in_place() {
    let x: Vec<i32> = (0..64).collect();
    let mut y = vec![0i32; 64];
    HostDevice
        .with_borrowed(&x, [8, 8], &mut y, [8, 8], |xt, yt| -> Result<()> {
            // What a generated launcher does: writers first, then readers.
            let mut write = TensorWrite::new(yt)?;
            // SAFETY: each program below stores its own row only.
            assert!(unsafe { write.allow_plain_stores() }, "the sole view");
            let read = PlainRead::new(xt)?;
            assert!(read.is_plain());
            assert!(TensorRead::new(xt).is_ok());
            let view = read.view();
            crate::host::try_run_grid([8, 1, 1], |pid| {
                let row = pid[0];
                let tile = crate::host::load(
                    &view,
                    &[
                        crate::host::Slice::Point(row as i64),
                        crate::host::Slice::Full,
                    ],
                    0,
                )?;
                let doubled = crate::host::add(&tile, &tile)?;
                crate::host::store(
                    &write,
                    &[
                        crate::host::Slice::Point(row as i64),
                        crate::host::Slice::Full,
                    ],
                    &doubled,
                )
            })
        })
        .unwrap()
        .unwrap();
    assert_eq!(y, (0..64).map(|v| 2 * v).collect::<Vec<_>>());
}

#[test]
fn lengths_must_match_the_shapes() {
    let mut y = [0f32; 2];
    let err = HostDevice
        .with_borrowed(&[1f32; 3], [2, 2], &mut y, [2], |_, _| ())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::LenMismatch {
                expected: 4,
                actual: 3,
                ..
            }
        ),
        "{err}"
    );
    let err = Device::host()
        .with_borrowed(&[1f32; 4], [2, 2], &mut y, [3], |_, _| ())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::LenMismatch {
                expected: 3,
                actual: 2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn views_that_could_escape_are_refused_and_copies_are_free() {
    let x = [1f32, 2.0, 3.0, 4.0];
    let mut y = [0f32; 4];
    let copy = HostDevice
        .with_borrowed(&x, [2, 2], &mut y, [4], |xt, yt| {
            for result in [
                xt.narrow(0, 0, 1).map(drop),
                xt.reshape([4]).map(drop),
                xt.strided([2], &[1], 0).map(drop),
                yt.narrow(0, 1, 2).map(drop),
                yt.reshape([2, 2]).map(drop),
            ] {
                let err = result.unwrap_err();
                assert!(matches!(err, Error::Borrowed { .. }), "{err}");
                assert!(err.to_string().contains("try_clone"), "{err}");
            }
            // An owned copy may outlive the scope.
            xt.try_clone().unwrap()
        })
        .unwrap();
    assert_eq!(copy.to_vec().unwrap(), x);
    assert_eq!(copy.narrow(0, 1, 1).unwrap().to_vec().unwrap(), [3.0, 4.0]);
}

#[test]
fn the_read_only_input_refuses_every_writer() {
    let data = [1u8, 2, 3];
    // SAFETY: `data` outlives the tensor (dropped at the end of this test
    // before `data`) and nothing writes it.
    let buffer = unsafe { HostBuffer::borrowed_read(&data) };
    let mut tensor = Tensor::<u8>::from_storage(Storage::Host(Arc::new(buffer)), [3].into());
    assert!(matches!(
        tensor.copy_from_slice(&[0; 3]),
        Err(Error::Borrowed { .. })
    ));
    assert!(matches!(
        TensorWrite::new(&mut tensor),
        Err(Error::Borrowed { .. })
    ));
    assert!(matches!(
        with_host_slice_mut(&mut tensor, |_| ()),
        Err(Error::Borrowed { .. })
    ));
    assert_eq!(tensor.to_vec().unwrap(), data);
    assert_eq!(data, [1, 2, 3]);
}

#[test]
fn a_nested_read_only_borrow_is_the_callers_memory_and_refuses_escapes() {
    let x = [1f32, 2.0, 3.0, 4.0];
    let w = [10f32, 20.0];
    let mut y = [0f32; 4];
    let device = Device::host();
    let copy = device
        .with_borrowed(&x, [2, 2], &mut y, [2, 2], |xt, yt| {
            device.with_borrowed_read(&w, [2], |wt| {
                let read = with_host_slice(wt, |s| s.as_ptr()).unwrap();
                assert_eq!(read, w.as_ptr(), "the tensor reads the caller's memory");
                for result in [wt.narrow(0, 0, 1).map(drop), wt.reshape([1, 2]).map(drop)] {
                    assert!(matches!(result, Err(Error::Borrowed { .. })));
                }
                let rows = with_host_slice(xt, |x| x.to_vec()).unwrap();
                let scaled = with_host_slice(wt, |w| {
                    rows.chunks(2)
                        .flat_map(|r| r.iter().zip(w).map(|(a, b)| a * b))
                        .collect::<Vec<_>>()
                })
                .unwrap();
                with_host_slice_mut(yt, |y| y.copy_from_slice(&scaled)).unwrap();
                wt.try_clone().unwrap()
            })
        })
        .unwrap()
        .unwrap();
    assert_eq!(y, [10.0, 40.0, 30.0, 80.0]);
    assert_eq!(copy.to_vec().unwrap(), w);
    assert!(matches!(
        device.with_borrowed_read(&w, [3], |_| ()),
        Err(Error::LenMismatch {
            expected: 3,
            actual: 2,
            ..
        })
    ));
}

#[test]
fn swapping_the_output_out_and_back_or_away_is_fine() {
    let device = Device::host();
    let mut y = [0f32; 2];
    let mut spare = device.zeros::<f32>([2]).unwrap();
    HostDevice
        .with_borrowed(&[0f32; 1], [1], &mut y, [2], |_, yt| {
            std::mem::swap(yt, &mut spare);
            spare.copy_from_slice(&[1.0, 2.0]).unwrap();
            std::mem::swap(yt, &mut spare);
        })
        .unwrap();
    assert_eq!(y, [1.0, 2.0]);
    // Swapped out and dropped inside the scope: the buffer is gone too.
    let mut spare = device.zeros::<f32>([2]).unwrap();
    HostDevice
        .with_borrowed(&[0f32; 1], [1], &mut y, [2], |_, yt| {
            let mut moved = device.zeros::<f32>([2]).unwrap();
            std::mem::swap(yt, &mut moved);
            std::mem::swap(yt, &mut spare);
            drop(moved);
        })
        .unwrap();
    assert_eq!(spare.to_vec().unwrap(), [0.0, 0.0]);
}

#[test]
fn a_panic_in_the_scope_unwinds_without_aborting() {
    let mut y = [0f32; 1];
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        HostDevice.with_borrowed(&[0f32; 1], [1], &mut y, [1], |_, _| -> () {
            panic!("inside the scope")
        })
    }));
    assert!(result.is_err());
}

/// The escape the types allow: the output swapped out of its `&mut` and
/// kept. The scope must not return while that tensor lives (it would reach
/// `y` after the borrow), so the process aborts; a child process shows it.
#[test]
fn an_output_kept_past_the_scope_aborts_the_process() {
    if std::env::var_os(ESCAPE_CHILD_ENV).is_some() {
        let mut kept = Device::host().zeros::<f32>([1]).unwrap();
        let mut y = [0f32; 1];
        let _ = HostDevice.with_borrowed(&[0f32; 1], [1], &mut y, [1], |_, yt| {
            std::mem::swap(yt, &mut kept);
        });
        println!("the scope returned with its output alive elsewhere");
        drop(kept);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(exe)
        .args([
            "--exact",
            "device::borrowed::tests::an_output_kept_past_the_scope_aborts_the_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ESCAPE_CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("the scope returned"), "{stdout}");
    assert!(stderr.contains("was moved out of its scope"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(6), "SIGABRT: {stderr}");
    }
}
