// @grid may only use tensor dims, tune parameters and literals.
phobos::kernel! {
    @autotune(BLOCK in [16, 64])
    @grid(cdiv(N, BLOK))
    kernel bad(x: tensor<f32>[N]) {
        x[program_id(0) * BLOCK :+ BLOCK] = 0.0
    }
}

fn main() {}
