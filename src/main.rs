//! The `protege` command line.

fn main() {
    println!("protege {}", env!("CARGO_PKG_VERSION"));
}
