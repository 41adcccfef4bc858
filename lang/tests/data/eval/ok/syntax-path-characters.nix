map baseNameOf [ ./a.b/c-d+e_f ./x/y.z ]
