// A tensor the kernel writes is passed as `&mut`.
phobos::kernel! {
    @grid(cdiv(N, 16))
    kernel twice(x: tensor<f32>[N], y: tensor<f32>[N]) {
        let i = program_id(0) * 16
        y[i :+ 16] = x[i :+ 16] * 2.0
    }
}

fn main() -> phobos::Result<()> {
    let device = phobos::Device::host();
    let x = device.zeros::<f32>([16])?;
    let y = device.zeros::<f32>([16])?;
    twice::launch(&device, &x, &y)
}
