# expect: E036
# message-contains: getEnv
builtins.getEnv "HOME"
