//! Compile-time behaviour of `resolvers!`: what it accepts, and the errors it reports at
//! the user's tokens (`tests/ui/fail/*.stderr`, one mistake per file).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
