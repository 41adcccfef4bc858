# ünïcödé comment ✓
"ünïcödé"
