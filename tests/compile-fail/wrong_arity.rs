// `exp` takes one argument.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], y: tensor<f32>[N]) {
        let t = x[0 :+ 16]
        y[0 :+ 16] = exp(t, t)
    }
}

fn main() {}
