# expect: E010
# message-contains: __map
__map (x: x) [ 1 ]
