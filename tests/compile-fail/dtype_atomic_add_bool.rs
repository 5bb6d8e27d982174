// `atomic_add` adds numbers: a bool tensor is refused (SPEC.md §9).
phobos::kernel! {
    kernel bad(flags: tensor<bool>[4]) {
        atomic_add(flags[0 :+ 4], true)
    }
}

fn main() {}
