# expect: E007
# message-contains: search path
import <nixpkgs> { }
