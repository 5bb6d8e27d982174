use super::*;
use crate::artifact::{AbiParam, Fingerprint};
use half::f16;

const PARAMS: &[AbiParam] = &[
    AbiParam {
        name: "x",
        kind: AbiParamKind::Pointer {
            elem: "f16",
            dims: &["M", "4"],
            written: false,
        },
    },
    AbiParam {
        name: "alpha",
        kind: AbiParamKind::Value { dtype: "f32" },
    },
    AbiParam {
        name: "flag",
        kind: AbiParamKind::Value { dtype: "bool" },
    },
    AbiParam {
        name: "y",
        kind: AbiParamKind::Pointer {
            elem: "f32",
            dims: &["M"],
            written: true,
        },
    },
];

fn artifact() -> KernelArtifact {
    KernelArtifact {
        name: "k",
        ptx_built: true,
        variants: &[],
        pruned: &[],
        grid: &["M"],
        params: PARAMS,
        dims: &["M"],
        fingerprint: Fingerprint {
            source_hash: 1,
            compiler_version: "0.1.0",
            backend_hash: 2,
            mlir_version: 22,
        },
        autotune: &[],
    }
}

fn variant(index_bits: u32) -> PtxVariant {
    PtxVariant {
        config: &[],
        chip: "sm_90",
        index_bits,
        ptx_lz4: &[],
        ptx_len_bytes: 0,
        threads: 128,
        shared_bytes: 0,
        registers: None,
        spill_bytes: None,
    }
}

fn tensor(elem: DType, ptr: u64, shape: &[usize], writable: bool) -> KernelArg {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    KernelArg::Tensor(TensorArg {
        elem,
        device_ptr: ptr,
        shape: shape.to_vec(),
        strides,
        writable,
    })
}

fn good_args(m: usize) -> Vec<KernelArg> {
    vec![
        tensor(DType::F16, 0x1000, &[m, 4], false),
        KernelArg::Scalar(ScalarArg::of(1.5f32)),
        KernelArg::Scalar(ScalarArg::of(true)),
        tensor(DType::F32, 0x2000, &[m], true),
    ]
}

#[test]
fn packs_params_dims_then_strides_in_declared_widths() {
    let packed = pack(&artifact(), &variant(32), &[("M", 7)], &good_args(7)).unwrap();
    let bytes: Vec<Vec<u8>> = packed.slots.iter().map(Slot::le_bytes).collect();
    let expected: Vec<Vec<u8>> = vec![
        0x1000u64.to_le_bytes().to_vec(),
        1.5f32.to_le_bytes().to_vec(),
        vec![1],
        0x2000u64.to_le_bytes().to_vec(),
        7i32.to_le_bytes().to_vec(),
        // x's strides [4, 1], then y's [1].
        4i32.to_le_bytes().to_vec(),
        1i32.to_le_bytes().to_vec(),
        1i32.to_le_bytes().to_vec(),
    ];
    assert_eq!(bytes, expected);

    let wide = pack(&artifact(), &variant(64), &[("M", 7)], &good_args(7)).unwrap();
    assert_eq!(wide.slots[5].le_bytes(), 4i64.to_le_bytes());
    assert_eq!(wide.slots.len(), 8);
}

#[test]
fn scalars_keep_their_bits() {
    assert_eq!(ScalarArg::of(f16::from_f32(-2.0)).le_bytes(), [0x00, 0xc0]);
    assert_eq!(ScalarArg::of(-1i8).le_bytes(), [0xff]);
    assert_eq!(ScalarArg::of(u64::MAX as i64).le_bytes(), [0xff; 8]);
    assert_eq!(ScalarArg::of(false).le_bytes(), [0]);
    let raw = ScalarArg::from_le_bytes(DType::F32, &2.0f32.to_le_bytes()).unwrap();
    assert_eq!(raw, ScalarArg::of(2.0f32));
    assert!(ScalarArg::from_le_bytes(DType::F32, &[0, 0]).is_err());
}

fn pack_err(dims: &[(&str, usize)], args: &[KernelArg]) -> String {
    pack(&artifact(), &variant(32), dims, args)
        .unwrap_err()
        .to_string()
}

#[test]
fn every_mismatch_is_an_error_naming_it() {
    let dims = [("M", 7)];
    assert!(pack_err(&dims, &good_args(7)[..3]).contains("3 arguments given"));
    assert!(pack_err(&[("N", 7)], &good_args(7)).contains("dims [\"N\"] given"));

    let mut args = good_args(7);
    args[0] = tensor(DType::F32, 1, &[7, 4], false);
    assert!(pack_err(&dims, &args).contains("`x` is a tensor of f16, got f32"));

    let mut args = good_args(7);
    args[0] = tensor(DType::F16, 1, &[7, 4, 1], false);
    assert!(pack_err(&dims, &args).contains("`x` has rank 2"));

    let mut args = good_args(7);
    args[0] = tensor(DType::F16, 1, &[7, 5], false);
    assert!(pack_err(&dims, &args).contains("axis 1 is `4` = 4, the tensor has 5"));

    let args = good_args(6);
    assert!(pack_err(&dims, &args).contains("axis 0 is `M` = 7, the tensor has 6"));

    let mut args = good_args(7);
    args[1] = KernelArg::Scalar(ScalarArg::of(1.5f64));
    assert!(pack_err(&dims, &args).contains("`alpha` is a f32 scalar, got f64"));

    let mut args = good_args(7);
    args[3] = tensor(DType::F32, 1, &[7], false);
    assert!(pack_err(&dims, &args).contains("written by the kernel but was passed read-only"));

    let mut args = good_args(7);
    args.swap(0, 1);
    assert!(pack_err(&dims, &args).contains("is a tensor, got a scalar"));
    let mut args = good_args(7);
    args[2] = tensor(DType::Bool, 1, &[], false);
    assert!(pack_err(&dims, &args).contains("is a scalar, got a tensor"));

    let too_big = 1usize << 31;
    assert!(pack_err(&[("M", too_big)], &good_args(too_big)).contains("reaches past the 32-bit"));
    let packed = pack(
        &artifact(),
        &variant(64),
        &[("M", too_big)],
        &good_args(too_big),
    );
    assert!(
        packed
            .unwrap_err()
            .to_string()
            .contains("does not fit the kernel's i32")
    );
}
