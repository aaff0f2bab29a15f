fn main() {
    let _chain = protege::resolvers! {
        use LoadText("1"); use LoadText("2"); use LoadText("3"); use LoadText("4");
        use LoadText("5"); use LoadText("6"); use LoadText("7"); use LoadText("8");
        use LoadText("9"); use LoadText("10"); use LoadText("11"); use LoadText("12");
        use LoadText("13"); use LoadText("14"); use LoadText("15"); use LoadText("16");
        use LoadText("17");
    };
}
