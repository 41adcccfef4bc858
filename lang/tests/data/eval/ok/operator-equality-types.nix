[ (1 == "1") (null == null) (null == false) ([ ] == { }) (true == true) ]
