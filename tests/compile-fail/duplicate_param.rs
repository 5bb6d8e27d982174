// Two parameters named `x`.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], x: tensor<f32>[N]) {
        x[0] = 1.0
    }
}

fn main() {}
