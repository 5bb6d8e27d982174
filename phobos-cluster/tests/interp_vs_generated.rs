//! The interpreter against the host code `phobos::kernel_file!` generated
//! for every example kernel (the `phobos-examples` crate's launchers), on
//! the same ragged inputs: the written tensors must be bit-identical (the
//! interpreter calls the same tile-library functions in the same order).

use std::collections::HashMap;

use half::{bf16, f16};
use phobos_build::ir::{Kernel, ParamKind};
use phobos_cluster::interp::{Program, Val};
use phobos_cluster::store::HostTensor;
use phobos_examples::kernels;
use phobos_rt::{DType, Device, Tensor};

/// Seeded inputs for every tensor parameter of `kernel`, with `dims`.
fn inputs(kernel: &Kernel, dims: &[(&str, usize)], seed: u64) -> HashMap<String, HostTensor> {
    let mut out = HashMap::new();
    let mut state = seed;
    for (index, p) in kernel.params.iter().enumerate() {
        let ParamKind::Tensor {
            elem, dims: pdims, ..
        } = &p.kind
        else {
            continue;
        };
        let shape: Vec<usize> = pdims
            .iter()
            .map(|d| match d {
                phobos_build::ir::Dim::Lit(v) => *v as usize,
                phobos_build::ir::Dim::Sym(name) => dims
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| panic!("dim {name}")),
            })
            .collect();
        let dtype = elem.scalar().expect("scalar tensor");
        let len: usize = shape.iter().product();
        let mut bytes = Vec::with_capacity(len * dtype.size_bytes());
        for i in 0..len {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407 + index as u64);
            let unit = ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0;
            let value = match dtype {
                DType::Bool => f64::from(u8::from(state >> 63 == 1)),
                // Integers: small values with some negatives and zeros.
                d if d.is_int() => {
                    ((state >> 33) % 19) as f64 - if d.is_signed_int() { 9.0 } else { 0.0 }
                }
                _ => unit * 2.0 + (i % 3) as f64 * 0.25,
            };
            phobos_cluster::with_dtype!(dtype, T => {
                phobos_cluster::store::RawElement::put_le(phobos_rt::cast::<f64, T>(value), &mut bytes)
            });
        }
        out.insert(
            p.name.clone(),
            HostTensor::from_le_bytes(dtype, &shape, &bytes).unwrap(),
        );
    }
    out
}

fn copy(tensors: &HashMap<String, HostTensor>) -> HashMap<String, HostTensor> {
    tensors
        .iter()
        .map(|(k, t)| {
            (
                k.clone(),
                HostTensor::from_le_bytes(t.dtype(), t.shape(), &t.to_le_bytes().unwrap()).unwrap(),
            )
        })
        .collect()
}

trait FromHost: phobos_rt::Element {
    fn from_host(h: HostTensor) -> Tensor<Self>;
}
macro_rules! from_host {
    ($($t:ty => $v:ident),*) => {$(
        impl FromHost for $t {
            fn from_host(h: HostTensor) -> Tensor<$t> {
                match h { HostTensor::$v(t) => t, other => panic!("expected {}, got {:?}", stringify!($t), other.dtype()) }
            }
        }
    )*};
}
from_host!(bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, f16 => F16, bf16 => Bf16, f32 => F32, f64 => F64);

/// The generated launcher's tensors, taken out of the map and put back.
struct Generated(HashMap<String, HostTensor>);

impl Generated {
    fn take<T: FromHost>(&mut self, name: &str) -> Tensor<T> {
        T::from_host(
            self.0
                .remove(name)
                .unwrap_or_else(|| panic!("tensor {name}")),
        )
    }
    fn put<T>(&mut self, name: &str, t: Tensor<T>)
    where
        T: phobos_rt::Element,
        Tensor<T>: phobos_cluster::store::IntoHostTensor,
    {
        use phobos_cluster::store::IntoHostTensor;
        self.0.insert(name.to_string(), t.into_host());
    }
}

/// Runs `source` through the interpreter (default config) and `generated`
/// on copies of the same inputs, and compares every written tensor's bytes.
fn check(
    source_file: &str,
    dims: &[(&str, usize)],
    scalars: &[(&str, Val)],
    generated: impl FnOnce(&mut Generated),
) {
    check_named(source_file, None, dims, scalars, generated)
}

fn check_named(
    source_file: &str,
    kernel_name: Option<&str>,
    dims: &[(&str, usize)],
    scalars: &[(&str, Val)],
    generated: impl FnOnce(&mut Generated),
) {
    let path = format!(
        "{}/../examples/kernels/{source_file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let module = phobos_build::check_source(&phobos_build::Source::file(path.clone(), text))
        .unwrap_or_else(|d| panic!("{}", d.render()));
    let kernel = match kernel_name {
        Some(name) => module.kernels.iter().find(|k| k.name == name).unwrap(),
        None => &module.kernels[0],
    };
    let mut interp_tensors = inputs(kernel, dims, 0x5eed);
    let mut gen_tensors = Generated(copy(&interp_tensors));
    {
        let refs: Vec<(&str, &mut HostTensor)> = interp_tensors
            .iter_mut()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let program = Program::new(kernel, &kernel.default_config(), refs, scalars).unwrap();
        program.run_all().unwrap();
    }
    generated(&mut gen_tensors);
    let mut compared = 0;
    for p in &kernel.params {
        if let ParamKind::Tensor { written: true, .. } = p.kind {
            let a = interp_tensors[&p.name].to_le_bytes().unwrap();
            let b = gen_tensors.0[&p.name].to_le_bytes().unwrap();
            assert_eq!(a.len(), b.len());
            let first_diff = a.iter().zip(&b).position(|(x, y)| x != y);
            assert!(
                first_diff.is_none(),
                "{}: `{}` differs at byte {:?}",
                kernel.name,
                p.name,
                first_diff
            );
            compared += 1;
        }
    }
    assert!(compared > 0, "{}: no written tensor", kernel.name);
}

/// The host device. Generated launches pin the default config
/// (`launch_with(.., &Config::default(), ..)`), the one the interpreter
/// runs, so the comparison holds whatever `PHOBOS_TUNE` and the user's
/// tune cache say (`launch` would take a tuned config, whose blocking
/// sums in another order).
fn dev() -> Device {
    Device::host()
}

#[test]
fn saxpy() {
    check(
        "saxpy.ph",
        &[("N", 1000)],
        &[("alpha", Val::from(1.75f32))],
        |g| {
            let (x, y, mut out) = (g.take::<f32>("x"), g.take::<f32>("y"), g.take::<f32>("out"));
            kernels::saxpy::launch_with(
                &dev(),
                &kernels::saxpy::Config::default(),
                &x,
                &y,
                &mut out,
                1.75,
            )
            .unwrap();
            g.put("out", out);
        },
    );
}

#[test]
fn gemm_f32_and_pipe() {
    for pipe in [false, true] {
        let file = if pipe {
            "gemm_f32_pipe.ph"
        } else {
            "gemm_f32.ph"
        };
        check(
            file,
            &[("M", 37), ("K", 29), ("N", 41)],
            &[("alpha", Val::from(1.5f32)), ("beta", Val::from(-0.5f32))],
            |g| {
                let (a, b, mut c) = (g.take::<f32>("A"), g.take::<f32>("B"), g.take::<f32>("C"));
                if pipe {
                    kernels::gemm_f32_pipe::launch_with(
                        &dev(),
                        &kernels::gemm_f32_pipe::Config::default(),
                        &a,
                        &b,
                        &mut c,
                        1.5,
                        -0.5,
                    )
                    .unwrap();
                } else {
                    kernels::gemm_f32::launch_with(
                        &dev(),
                        &kernels::gemm_f32::Config::default(),
                        &a,
                        &b,
                        &mut c,
                        1.5,
                        -0.5,
                    )
                    .unwrap();
                }
                g.put("C", c);
            },
        );
    }
}

#[test]
fn gemm_f16_variants() {
    for file in [
        "gemm_f16.ph",
        "gemm_f16_pipe.ph",
        "gemm_f16_tc.ph",
        "gemm_f16_tc_pipe.ph",
    ] {
        check(file, &[("M", 70), ("K", 45), ("N", 66)], &[], |g| {
            let (a, b, mut c) = (g.take::<f16>("A"), g.take::<f16>("B"), g.take::<f32>("C"));
            match file {
                "gemm_f16.ph" => kernels::gemm_f16::launch_with(
                    &dev(),
                    &kernels::gemm_f16::Config::default(),
                    &a,
                    &b,
                    &mut c,
                ),
                "gemm_f16_pipe.ph" => kernels::gemm_f16_pipe::launch_with(
                    &dev(),
                    &kernels::gemm_f16_pipe::Config::default(),
                    &a,
                    &b,
                    &mut c,
                ),
                "gemm_f16_tc.ph" => kernels::gemm_f16_tc::launch_with(
                    &dev(),
                    &kernels::gemm_f16_tc::Config::default(),
                    &a,
                    &b,
                    &mut c,
                ),
                _ => kernels::gemm_f16_tc_pipe::launch_with(
                    &dev(),
                    &kernels::gemm_f16_tc_pipe::Config::default(),
                    &a,
                    &b,
                    &mut c,
                ),
            }
            .unwrap();
            g.put("C", c);
        });
    }
}

#[test]
fn softmax_and_norms() {
    check("softmax.ph", &[("R", 5), ("C", 100)], &[], |g| {
        let (x, mut y) = (g.take::<f32>("X"), g.take::<f32>("Y"));
        kernels::softmax::launch_with(&dev(), &kernels::softmax::Config::default(), &x, &mut y)
            .unwrap();
        g.put("Y", y);
    });
    check(
        "rmsnorm.ph",
        &[("R", 3), ("C", 150)],
        &[("eps", Val::from(1e-5f32))],
        |g| {
            let (x, w, mut y) = (g.take::<f32>("X"), g.take::<f32>("W"), g.take::<f32>("Y"));
            kernels::rmsnorm::launch_with(
                &dev(),
                &kernels::rmsnorm::Config::default(),
                &x,
                &w,
                &mut y,
                1e-5,
            )
            .unwrap();
            g.put("Y", y);
        },
    );
    check(
        "layernorm.ph",
        &[("R", 3), ("C", 150)],
        &[("eps", Val::from(1e-5f32))],
        |g| {
            let (x, w, b, mut y) = (
                g.take::<f32>("X"),
                g.take::<f32>("W"),
                g.take::<f32>("B"),
                g.take::<f32>("Y"),
            );
            kernels::layernorm::launch_with(
                &dev(),
                &kernels::layernorm::Config::default(),
                &x,
                &w,
                &b,
                &mut y,
                1e-5,
            )
            .unwrap();
            g.put("Y", y);
        },
    );
}

#[test]
fn flash_attention_variants() {
    let dims = [("H", 2), ("S", 37), ("T", 45)];
    check(
        "flash_attn_f32.ph",
        &dims,
        &[("scale", Val::from(0.125f32))],
        |g| {
            let (q, k, v, mut o) = (
                g.take::<f32>("Q"),
                g.take::<f32>("K"),
                g.take::<f32>("V"),
                g.take::<f32>("O"),
            );
            kernels::flash_attn_f32::launch_with(
                &dev(),
                &kernels::flash_attn_f32::Config::default(),
                &q,
                &k,
                &v,
                &mut o,
                0.125,
            )
            .unwrap();
            g.put("O", o);
        },
    );
    for tc in [false, true] {
        let file = if tc {
            "flash_attn_f16_tc.ph"
        } else {
            "flash_attn_f16.ph"
        };
        check(file, &dims, &[("scale", Val::from(0.125f32))], |g| {
            let (q, k, v, mut o) = (
                g.take::<f16>("Q"),
                g.take::<f16>("K"),
                g.take::<f16>("V"),
                g.take::<f16>("O"),
            );
            if tc {
                kernels::flash_attn_f16_tc::launch_with(
                    &dev(),
                    &kernels::flash_attn_f16_tc::Config::default(),
                    &q,
                    &k,
                    &v,
                    &mut o,
                    0.125,
                )
                .unwrap();
            } else {
                kernels::flash_attn_f16::launch_with(
                    &dev(),
                    &kernels::flash_attn_f16::Config::default(),
                    &q,
                    &k,
                    &v,
                    &mut o,
                    0.125,
                )
                .unwrap();
            }
            g.put("O", o);
        });
    }
}

#[test]
fn gla_chunk() {
    check(
        "gla_chunk.ph",
        &[("H", 2), ("T", 37)],
        &[("scale", Val::from(0.125f32))],
        |g| {
            let (q, k, v, gg, mut o) = (
                g.take::<f32>("Q"),
                g.take::<f32>("K"),
                g.take::<f32>("V"),
                g.take::<f32>("G"),
                g.take::<f32>("O"),
            );
            kernels::gla_chunk::launch_with(
                &dev(),
                &kernels::gla_chunk::Config::default(),
                &q,
                &k,
                &v,
                &gg,
                &mut o,
                0.125,
            )
            .unwrap();
            g.put("O", o);
        },
    );
}

#[test]
fn edge_cases_integer_float_and_loops() {
    // Integer ops (division by zero, shifts past the width, wrapping).
    check_named(
        "edge/edge_cases.ph",
        Some("edge_int_i8"),
        &[("N", 100)],
        &[],
        |g| {
            let (a, b) = (g.take::<i8>("a"), g.take::<i8>("b"));
            let (mut quo, mut rem, mut shl, mut shr, mut up) = (
                g.take::<i8>("quo"),
                g.take::<i8>("rem"),
                g.take::<i8>("shl"),
                g.take::<i8>("shr"),
                g.take::<i8>("up"),
            );
            kernels::edge_int_i8::launch(
                &dev(),
                &a,
                &b,
                &mut quo,
                &mut rem,
                &mut shl,
                &mut shr,
                &mut up,
            )
            .unwrap();
            for (n, t) in [
                ("quo", quo),
                ("rem", rem),
                ("shl", shl),
                ("shr", shr),
                ("up", up),
            ] {
                g.put(n, t);
            }
        },
    );
    for float in ["f32", "f16"] {
        check_named(
            "edge/edge_cases.ph",
            Some(&format!("edge_float_{float}")),
            &[("N", 100)],
            &[],
            |g| {
                let names = [
                    "rem", "lo", "hi", "to_i8", "to_u8", "to_i16", "to_u16", "to_i32", "to_u32",
                    "to_i64",
                ];
                macro_rules! run {
                    ($t:ty, $launch:path) => {{
                        let (a, b) = (g.take::<$t>("a"), g.take::<$t>("b"));
                        let (mut rem, mut lo, mut hi) =
                            (g.take::<$t>("rem"), g.take::<$t>("lo"), g.take::<$t>("hi"));
                        let (mut i8_, mut u8_, mut i16_, mut u16_) = (
                            g.take::<i8>("to_i8"),
                            g.take::<u8>("to_u8"),
                            g.take::<i16>("to_i16"),
                            g.take::<u16>("to_u16"),
                        );
                        let (mut i32_, mut u32_, mut i64_) = (
                            g.take::<i32>("to_i32"),
                            g.take::<u32>("to_u32"),
                            g.take::<i64>("to_i64"),
                        );
                        $launch(
                            &dev(),
                            &a,
                            &b,
                            &mut rem,
                            &mut lo,
                            &mut hi,
                            &mut i8_,
                            &mut u8_,
                            &mut i16_,
                            &mut u16_,
                            &mut i32_,
                            &mut u32_,
                            &mut i64_,
                        )
                        .unwrap();
                        g.put(names[0], rem);
                        g.put(names[1], lo);
                        g.put(names[2], hi);
                        g.put(names[3], i8_);
                        g.put(names[4], u8_);
                        g.put(names[5], i16_);
                        g.put(names[6], u16_);
                        g.put(names[7], i32_);
                        g.put(names[8], u32_);
                        g.put(names[9], i64_);
                    }};
                }
                if float == "f32" {
                    run!(f32, kernels::edge_float_f32::launch);
                } else {
                    run!(f16, kernels::edge_float_f16::launch);
                }
            },
        );
    }
}
