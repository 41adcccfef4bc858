[ (toString [ ]) (toString [ [ ] ]) (toString [ 1 [ ] 2 ]) (toString [ null null ]) (toString [ "" "" ]) ]
