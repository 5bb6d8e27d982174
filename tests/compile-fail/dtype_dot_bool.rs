// `dot` contracts numbers; bool tiles are refused (SPEC.md §10).
phobos::kernel! {
    kernel bad(a: tensor<bool>[4, 4], b: tensor<bool>[4, 4], out: tensor<i32>[4, 4]) {
        out[:, :] = dot(a[:, :], b[:, :])
    }
}

fn main() {}
