fn main() {
    let _chain = protege::resolvers! {
        use LoadText(template = "Subject: {{ message.subject }}\nFrom: {{ message.form }}");
    };
}
