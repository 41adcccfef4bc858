https://example.org + "/path"
