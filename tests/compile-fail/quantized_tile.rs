// Quantized element types exist for tensors only.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        var t: tile<q4_0>[32] = 0.0
        x[0] = 1.0
    }
}

fn main() {}
