[ (isNull null) (isNull 0) ]
