# expect: E027
# message-contains: `p`
# message-contains: `q`
(rec { p = q; q = p; }).p
