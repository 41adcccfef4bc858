[ "nginx" ]
