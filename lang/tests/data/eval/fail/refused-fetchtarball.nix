# expect: E036
# message-contains: fetchTarball
fetchTarball "https://example.org/a.tar.gz"
