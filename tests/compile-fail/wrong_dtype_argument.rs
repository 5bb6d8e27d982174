// Tensor indices are integers.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        x[1.5] = 1.0
    }
}

fn main() {}
