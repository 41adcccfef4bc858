# expect: E020
!1
