// A misspelled built-in: the error lists the close match.
phobos::kernel! {
    kernel rows(x: tensor<f32>[R, 64], y: tensor<f32>[R, 1]) {
        let r = program_id(0)
        y[r :+ 1, :] = rowsun(x[r :+ 1, :])
    }
}

fn main() {}
