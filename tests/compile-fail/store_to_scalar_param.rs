// Only tensors can be stored into; `alpha` is a scalar parameter.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], alpha: f32) {
        alpha[0] = x[0]
    }
}

fn main() {}
