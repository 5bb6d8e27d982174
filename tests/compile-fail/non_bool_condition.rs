// `if` needs a bool condition.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        if program_id(0) {
            x[0] = 1.0
        }
    }
}

fn main() {}
