// `a :` without an end is not a slice; use `a : b` or `a :+ n`.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], y: tensor<f32>[N]) {
        y[0 :+ 16] = x[4 :]
    }
}

fn main() {}
