// The stored tile must have the slice's shape.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N], y: tensor<f32>[N]) {
        y[0 :+ 16] = x[0 :+ 32]
    }
}

fn main() {}
