# expect: E020
{ } // [ ]
