"héllo wörld ✓ 日本"
