// Grids have at most three axes.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        x[program_id(3)] = 1.0
    }
}

fn main() {}
