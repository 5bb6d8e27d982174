// Unknown attributes list the known ones.
phobos::kernel! {
    @tile(16)
    kernel bad(x: tensor<f32>[N]) {
        x[0] = 1.0
    }
}

fn main() {}
