// A syntax error points at the token where the parser gave up.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        let = 1.0
        x[0] = 2.0
    }
}

fn main() {}
