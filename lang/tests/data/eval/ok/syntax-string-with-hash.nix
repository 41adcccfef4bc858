"#not a comment"
