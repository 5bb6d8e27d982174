// `f31` is not an element type.
phobos::kernel! {
    kernel bad(x: tensor<f31>[N]) {
        x[0] = 1.0
    }
}

fn main() {}
