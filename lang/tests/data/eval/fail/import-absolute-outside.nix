# expect: E034
import /etc/passwd
