[ null true false ]
