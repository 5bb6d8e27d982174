// Tile dims must be known per config; N is a runtime tensor dim.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        var acc: tile<f32>[N] = 0.0
        x[0 :+ 16] = acc[0 :+ 16]
    }
}

fn main() {}
