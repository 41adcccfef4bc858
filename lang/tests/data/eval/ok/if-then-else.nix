[ (if true then 1 else 2) (if false then 1 else 2) (if 1 < 2 then "yes" else "no") ]
