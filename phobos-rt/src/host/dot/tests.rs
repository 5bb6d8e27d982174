use super::*;

#[test]
fn placeholder_compiles() {
    let a = Tile::from_vec(&[1, 1], vec![2.0f32]).unwrap();
    assert_eq!(dot(&a, &a).unwrap().as_slice(), &[4.0]);
}
