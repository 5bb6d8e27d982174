// Adding a [16] tile to a [32] tile: both shapes are shown.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], y: tensor<f32>[N]) {
        let a = x[0 :+ 16]
        let b = x[0 :+ 32]
        y[0 :+ 16] = a + b
    }
}

fn main() {}
