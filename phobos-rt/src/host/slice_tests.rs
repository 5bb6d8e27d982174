//! Masked slicing against a plain reference: every tile element computed
//! from its coordinates, one at a time.

use super::*;
use crate::host::{PlainRead, TensorRead, TensorWrite};
use crate::{Device, Tensor};
use proptest::prelude::*;

fn tensor_2d(rows: usize, cols: usize) -> Tensor<i32> {
    let data: Vec<i32> = (0..(rows * cols) as i32).map(|x| x + 1).collect();
    Device::host().tensor_from(&data, [rows, cols]).unwrap()
}

/// Value of `t` at signed coordinates, or `other` outside.
fn reference_at(t: &[i32], shape: &[usize], coords: &[i64], other: i32) -> i32 {
    let mut flat = 0usize;
    for (&c, &d) in coords.iter().zip(shape) {
        if c < 0 || c as usize >= d {
            return other;
        }
        flat = flat * d + c as usize;
    }
    t[flat]
}

#[test]
fn load_masks_past_the_end_and_negative_starts() {
    let t = tensor_2d(3, 4);
    let view = TensorRead::new(&t).unwrap();
    let tile = load(
        &view,
        &[
            Slice::Span { start: -1, len: 3 },
            Slice::Span { start: 2, len: 4 },
        ],
        -9,
    )
    .unwrap();
    assert_eq!(tile.shape(), &[3, 4]);
    #[rustfmt::skip]
    let expected = vec![
        -9, -9, -9, -9,
         3,  4, -9, -9,
         7,  8, -9, -9,
    ];
    assert_eq!(tile.as_slice(), expected.as_slice());
}

#[test]
fn points_drop_dims_and_mask_whole_tiles() {
    let t = tensor_2d(3, 4);
    let view = TensorRead::new(&t).unwrap();
    let row = load(&view, &[Slice::Point(1), Slice::Full], 0).unwrap();
    assert_eq!(row.shape(), &[4]);
    assert_eq!(row.as_slice(), &[5, 6, 7, 8]);
    let col = load(
        &view,
        &[Slice::Span { start: 1, len: 3 }, Slice::Point(3)],
        0,
    )
    .unwrap();
    assert_eq!(col.as_slice(), &[8, 12, 0]);
    let outside = load(&view, &[Slice::Point(3), Slice::Full], 7).unwrap();
    assert_eq!(outside.as_slice(), &[7; 4]);
    let scalar = load(&view, &[Slice::Point(2), Slice::Point(1)], 0).unwrap();
    assert_eq!(scalar.rank(), 0);
    assert_eq!(scalar.item().unwrap(), 10);
    assert_eq!(load_point(&view, &[2, 1], 0).unwrap(), 10);
    assert_eq!(load_point(&view, &[-1, 1], 42).unwrap(), 42);
    assert_eq!(load_point(&view, &[0, 4], 42).unwrap(), 42);
}

#[test]
fn slicing_errors_are_reported() {
    let t = tensor_2d(2, 2);
    let view = TensorRead::new(&t).unwrap();
    assert_eq!(
        load(&view, &[Slice::Full], 0).unwrap_err(),
        Error::SliceRank {
            tensor_rank: 2,
            slices: 1
        }
    );
    assert!(matches!(
        load_point(&view, &[0], 0),
        Err(Error::SliceRank { .. })
    ));
    let t5 = Device::host().zeros::<u8>([1, 1, 1, 1, 1]).unwrap();
    let v5 = TensorRead::new(&t5).unwrap();
    assert!(matches!(
        load(&v5, &[Slice::Full; 5], 0),
        Err(Error::TileRank { rank: 5, .. })
    ));
    assert_eq!(
        load(
            &v5,
            &[
                Slice::Point(0),
                Slice::Full,
                Slice::Full,
                Slice::Full,
                Slice::Full
            ],
            0
        )
        .unwrap()
        .rank(),
        4
    );
    let mut out = tensor_2d(2, 2);
    let w = TensorWrite::new(&mut out).unwrap();
    let wrong = Tile::from_vec(&[3], vec![1, 2, 3]).unwrap();
    assert!(matches!(
        store(&w, &[Slice::Full, Slice::Full], &wrong),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn rank0_tensors_load_and_store() {
    let mut t = Device::host().tensor_from(&[5.0f32], Vec::new()).unwrap();
    assert_eq!(
        load(&TensorRead::new(&t).unwrap(), &[], 0.0)
            .unwrap()
            .item()
            .unwrap(),
        5.0
    );
    let w = TensorWrite::new(&mut t).unwrap();
    store_scalar(&w, &[], 6.0).unwrap();
    atomic_add_scalar(&w, &[], 1.5).unwrap();
    assert_eq!(load_point(&w, &[], 0.0).unwrap(), 7.5);
}

#[test]
fn stores_skip_masked_elements_and_broadcast() {
    let mut t = Device::host().zeros::<i32>([3, 3]).unwrap();
    {
        let w = TensorWrite::new(&mut t).unwrap();
        let tile = Tile::from_vec(&[2, 2], vec![1, 2, 3, 4]).unwrap();
        store(
            &w,
            &[
                Slice::Span { start: -1, len: 2 },
                Slice::Span { start: 2, len: 2 },
            ],
            &tile,
        )
        .unwrap();
        let col = Tile::from_vec(&[2, 1], vec![7, 8]).unwrap();
        store(
            &w,
            &[
                Slice::Span { start: 1, len: 2 },
                Slice::Span { start: 0, len: 2 },
            ],
            &col,
        )
        .unwrap();
        store_scalar(&w, &[Slice::Point(5), Slice::Full], 99).unwrap();
    }
    #[rustfmt::skip]
    let expected = vec![
        0, 0, 3,
        7, 7, 0,
        8, 8, 0,
    ];
    assert_eq!(t.to_vec().unwrap(), expected);
}

#[test]
fn atomic_add_accumulates_from_racing_programs() {
    let mut hist = Device::host().zeros::<f32>([4]).unwrap();
    let mut counts = Device::host().zeros::<u32>([4]).unwrap();
    {
        let (h, c) = (
            TensorWrite::new(&mut hist).unwrap(),
            TensorWrite::new(&mut counts).unwrap(),
        );
        crate::host::run_grid([64, 4, 1], |pid| {
            let bin = i64::from(pid[1]);
            atomic_add_scalar(&h, &[Slice::Point(bin)], 0.5).unwrap();
            let ones = Tile::full(&[2], 1u32).unwrap();
            atomic_add(
                &c,
                &[Slice::Span {
                    start: bin - 1,
                    len: 2,
                }],
                &ones,
            )
            .unwrap();
        })
        .unwrap();
    }
    assert_eq!(hist.to_vec().unwrap(), vec![32.0; 4]);
    // Bin b receives from programs b and b+1; program 0's bin -1 is masked.
    assert_eq!(counts.to_vec().unwrap(), vec![128, 128, 128, 64]);
}

#[test]
fn racing_stores_leave_one_of_the_stored_values() {
    let mut t = Device::host().zeros::<i64>([8]).unwrap();
    {
        let w = TensorWrite::new(&mut t).unwrap();
        crate::host::run_grid([100, 1, 1], |pid| {
            store_scalar(&w, &[Slice::Full], i64::from(pid[0])).unwrap();
        })
        .unwrap();
    }
    assert!(t.to_vec().unwrap().iter().all(|v| (0..100).contains(v)));
}

#[test]
fn write_views_read_what_they_hold() {
    let mut t = tensor_2d(2, 3);
    let w = TensorWrite::new(&mut t).unwrap();
    let tile = load(&w, &[Slice::Full, Slice::Span { start: 1, len: 2 }], 0).unwrap();
    assert_eq!(tile.as_slice(), &[2, 3, 5, 6]);
    assert_eq!(w.shape(), &[2, 3]);
    assert_eq!((w.dim(1), w.dim(5), w.rank()), (3, 0, 2));
}

fn slice_strategy(extent: usize) -> impl Strategy<Value = Slice> {
    let extent = extent as i64;
    prop_oneof![
        1 => Just(Slice::Full),
        2 => (-3i64..extent + 3).prop_map(Slice::Point),
        4 => (-6i64..extent + 3, 0usize..9).prop_map(|(start, len)| Slice::Span { start, len }),
    ]
}

/// A rank-1..=3 tensor, possibly a transposed or sub-strided view, with one
/// slice per dim.
fn case() -> impl Strategy<Value = (Vec<usize>, bool, Vec<Slice>)> {
    prop::collection::vec(1usize..6, 1..=3).prop_flat_map(|shape| {
        let slices = shape.iter().map(|&d| slice_strategy(d)).collect::<Vec<_>>();
        (Just(shape), any::<bool>(), slices)
    })
}

/// Builds the tensor: row-major, or (when `reversed`) a view of a bigger
/// buffer whose dims are stored in reverse order with padding.
fn make_tensor(shape: &[usize], reversed: bool) -> (Tensor<i32>, Vec<i32>) {
    let len: usize = shape.iter().product();
    let logical: Vec<i32> = (0..len as i32).map(|x| x * 3 + 1).collect();
    let dev = Device::host();
    if !reversed {
        return (dev.tensor_from(&logical, shape).unwrap(), logical);
    }
    // Column-major storage with each stride padded by one element.
    let mut strides = vec![0usize; shape.len()];
    let mut step = 1;
    for (s, &d) in strides.iter_mut().zip(shape) {
        *s = step;
        step = step * d + 1;
    }
    let mut storage = vec![-1i32; step + 1];
    let mut index = vec![0usize; shape.len()];
    for &v in &logical {
        let at = 1 + index
            .iter()
            .zip(&strides)
            .map(|(i, s)| i * s)
            .sum::<usize>();
        storage[at] = v;
        crate::tensor::advance(&mut index, shape);
    }
    let buffer = dev.tensor_from(&storage, [storage.len()]).unwrap();
    (buffer.strided(shape, &strides, 1).unwrap(), logical)
}

/// Coordinates of each tile element in tile order.
fn tile_coords(shape: &[usize], slices: &[Slice]) -> Vec<Vec<i64>> {
    let mut coords = vec![Vec::new()];
    for (slice, &d) in slices.iter().zip(shape) {
        let options: Vec<i64> = match *slice {
            Slice::Point(i) => vec![i],
            Slice::Span { start, len } => (0..len as i64).map(|j| start + j).collect(),
            Slice::Full => (0..d as i64).collect(),
        };
        coords = coords
            .into_iter()
            .flat_map(|c| options.iter().map(move |&o| [c.clone(), vec![o]].concat()))
            .collect();
    }
    coords
}

proptest! {
    #[test]
    fn load_matches_reference((shape, reversed, slices) in case()) {
        let (t, logical) = make_tensor(&shape, reversed);
        let tile = load(&TensorRead::new(&t).unwrap(), &slices, -7).unwrap();
        let expected: Vec<i32> = tile_coords(&shape, &slices)
            .iter()
            .map(|c| reference_at(&logical, &shape, c, -7))
            .collect();
        prop_assert_eq!(tile.as_slice(), expected.as_slice());
    }

    #[test]
    fn store_and_atomic_add_match_reference((shape, reversed, slices) in case()) {
        let (mut t, logical) = make_tensor(&shape, reversed);
        let coords = tile_coords(&shape, &slices);
        let values: Vec<i32> = (0..coords.len() as i32).map(|x| 1000 + x).collect();
        let tile_shape = load(&TensorRead::new(&t).unwrap(), &slices, 0).unwrap().shape().to_vec();
        let tile = Tile::from_vec(&tile_shape, values.clone()).unwrap();
        let mut expected_store = logical.clone();
        let mut expected_add = logical.clone();
        let strides = Shape::from(shape.clone()).row_major_strides();
        for (c, &v) in coords.iter().zip(&values) {
            if c.iter().zip(&shape).all(|(&x, &d)| x >= 0 && (x as usize) < d) {
                let flat: usize = c.iter().zip(&strides).map(|(&x, s)| x as usize * s).sum();
                expected_store[flat] = v;
                expected_add[flat] += v;
            }
        }
        {
            let w = TensorWrite::new(&mut t).unwrap();
            atomic_add(&w, &slices, &tile).unwrap();
        }
        prop_assert_eq!(&t.to_vec().unwrap(), &expected_add);
        {
            let w = TensorWrite::new(&mut t).unwrap();
            store(&w, &slices, &tile).unwrap();
        }
        // Stores overwrite what the add left, so the in-bounds elements
        // match the store reference and the rest kept their value.
        prop_assert_eq!(t.to_vec().unwrap(), expected_store);
    }
}

use crate::Shape;

#[test]
fn absurd_span_lengths_are_errors_not_aborts() {
    let t = tensor_2d(2, 2);
    let view = TensorRead::new(&t).unwrap();
    let huge = Slice::Span {
        start: 0,
        len: 1 << 40,
    };
    assert!(matches!(
        load(&view, &[huge, Slice::Full], 0),
        Err(Error::BadShape { .. })
    ));
    let far = Slice::Span {
        start: i64::MAX - 1,
        len: 4,
    };
    assert_eq!(
        load(&view, &[far, Slice::Full], 3).unwrap().as_slice(),
        &[3; 8]
    );
    let before = Slice::Span {
        start: i64::MIN,
        len: 4,
    };
    assert_eq!(
        load(&view, &[Slice::Full, before], 3).unwrap().as_slice(),
        &[3; 8]
    );
}

/// Whether `load_in_place` must read `t[slices]` in place: a plain view,
/// at least one element, every coordinate in bounds, and the elements one
/// after another in memory in tile order.
fn reads_in_place(t: &Tensor<i32>, slices: &[Slice], plain: bool) -> bool {
    let coords = tile_coords(t.shape(), slices);
    let in_bounds = |c: &Vec<i64>| {
        c.iter()
            .zip(t.shape())
            .all(|(&x, &d)| x >= 0 && (x as usize) < d)
    };
    if !plain || coords.is_empty() || !coords.iter().all(in_bounds) {
        return false;
    }
    let elem = |c: &Vec<i64>| -> usize {
        c.iter()
            .zip(t.strides())
            .map(|(&x, s)| x as usize * s)
            .sum()
    };
    coords.windows(2).all(|w| elem(&w[1]) == elem(&w[0]) + 1)
}

#[test]
fn an_unmasked_row_of_a_plain_view_is_read_in_place() {
    let t = tensor_2d(3, 8);
    let plain = PlainRead::new(&t).unwrap();
    assert!(plain.is_plain());
    let view = plain.view();
    let row = [Slice::Point(1), Slice::Span { start: 2, len: 4 }];
    let loaded = load_in_place(&view, &row, -9).unwrap();
    assert!(loaded.is_borrowed());
    assert_eq!(loaded.shape(), &[4]);
    assert_eq!(loaded.as_slice(), &[11, 12, 13, 14]);
    // The same row read twice: both borrow the same memory.
    let again = load_in_place(&view, &row, -9).unwrap();
    assert!(again.is_borrowed());
    assert_eq!(again.as_slice().as_ptr(), loaded.as_slice().as_ptr());
    // A block of whole rows is contiguous too.
    let block = [Slice::Span { start: 1, len: 2 }, Slice::Full];
    let loaded = load_in_place(&view, &block, -9).unwrap();
    assert!(loaded.is_borrowed());
    assert_eq!(loaded.shape(), &[2, 8]);
    assert_eq!(
        loaded.as_slice(),
        load(&view, &block, -9).unwrap().as_slice()
    );
}

#[test]
fn ragged_strided_and_partial_blocks_are_copied() {
    let t = tensor_2d(3, 8);
    let plain = PlainRead::new(&t).unwrap();
    let view = plain.view();
    // The ragged last block of a row: masked, so copied with `other`.
    let ragged = load_in_place(
        &view,
        &[Slice::Point(2), Slice::Span { start: 6, len: 4 }],
        -9,
    )
    .unwrap();
    assert!(!ragged.is_borrowed());
    assert_eq!(ragged.as_slice(), &[23, 24, -9, -9]);
    // Part of two rows: not one run of memory.
    let partial = [
        Slice::Span { start: 0, len: 2 },
        Slice::Span { start: 0, len: 4 },
    ];
    let loaded = load_in_place(&view, &partial, -9).unwrap();
    assert!(!loaded.is_borrowed());
    assert_eq!(loaded.as_slice(), &[1, 2, 3, 4, 9, 10, 11, 12]);
    // A column of a row-major tensor (a transposed view's row): strided.
    let transposed = t.strided([8, 3], &[1, 8], 0).unwrap();
    let plain_t = PlainRead::new(&transposed).unwrap();
    let view_t = plain_t.view();
    let column = load_in_place(&view_t, &[Slice::Point(1), Slice::Full], 0).unwrap();
    assert!(!column.is_borrowed());
    assert_eq!(column.as_slice(), &[2, 10, 18]);
}

#[test]
fn written_and_aliased_tensors_are_copied() {
    let mut t = tensor_2d(2, 4);
    let row = [Slice::Point(0), Slice::Full];
    {
        // A tensor the launch writes is read through its write view.
        let w = TensorWrite::new(&mut t).unwrap();
        let loaded = load_in_place(&w, &row, 0).unwrap();
        assert!(!loaded.is_borrowed());
        assert_eq!(loaded.as_slice(), &[1, 2, 3, 4]);
    }
    // A read-only view of storage a written view aliases reads atomically.
    let read_alias = t.narrow(0, 0, 1).unwrap();
    let w = TensorWrite::new(&mut t).unwrap();
    let plain = PlainRead::new(&read_alias).unwrap();
    assert!(!plain.is_plain(), "a writer is in");
    let view = plain.view();
    let loaded = load_in_place(&view, &row, 0).unwrap();
    assert!(!loaded.is_borrowed());
    assert_eq!(loaded.as_slice(), &[1, 2, 3, 4]);
    drop(w);
}

proptest! {
    /// `load_in_place` holds what `load` copies, bit for bit, and reads in
    /// place exactly when the tile is an unmasked run of the tensor's memory.
    #[test]
    fn load_in_place_matches_the_copying_load((shape, reversed, slices) in case(), plain in any::<bool>()) {
        let (t, _) = make_tensor(&shape, reversed);
        let copied = load(&TensorRead::new(&t).unwrap(), &slices, -7).unwrap();
        let loaded = if plain {
            let guard = PlainRead::new(&t).unwrap();
            let view = guard.view();
            let loaded = load_in_place(&view, &slices, -7).unwrap();
            let owned = loaded.tile().unwrap().clone();
            (loaded.is_borrowed(), loaded.as_slice().to_vec(), owned)
        } else {
            let view = TensorRead::new(&t).unwrap();
            let loaded = load_in_place(&view, &slices, -7).unwrap();
            let owned = loaded.tile().unwrap().clone();
            (loaded.is_borrowed(), loaded.as_slice().to_vec(), owned)
        };
        let (borrowed, values, as_tile) = loaded;
        prop_assert_eq!(borrowed, reads_in_place(&t, &slices, plain));
        prop_assert_eq!(values.as_slice(), copied.as_slice());
        prop_assert_eq!(as_tile, copied);
    }
}

proptest! {
    /// A store with plain stores allowed (whole contiguous blocks go out
    /// as one copy) leaves what the element-by-element store leaves.
    #[test]
    fn plain_stores_match_the_element_stores((shape, reversed, slices) in case()) {
        let (mut plain_target, _) = make_tensor(&shape, reversed);
        let (mut atomic_target, _) = make_tensor(&shape, reversed);
        let tile_shape = load(&TensorRead::new(&plain_target).unwrap(), &slices, 0).unwrap().shape().to_vec();
        let len: usize = tile_shape.iter().product();
        let tile = Tile::from_vec(&tile_shape, (0..len as i32).map(|x| 500 - x).collect()).unwrap();
        {
            let mut w = TensorWrite::new(&mut plain_target).unwrap();
            // SAFETY: one thread stores; nothing else reads the tensor.
            let _ = unsafe { w.allow_plain_stores() };
            store(&w, &slices, &tile).unwrap();
        }
        {
            let w = TensorWrite::new(&mut atomic_target).unwrap();
            store(&w, &slices, &tile).unwrap();
        }
        prop_assert_eq!(plain_target.to_vec().unwrap(), atomic_target.to_vec().unwrap());
    }
}
